package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
)

// errPrecondition is a write whose If-Match does not match the resource as
// it is when the write runs: 412, nothing changed.
var errPrecondition = errors.New("precondition failed")

func preconditionFailed(what string) *problem.Problem {
	return problem.New(http.StatusPreconditionFailed, "precondition_failed",
		what+" changed since it was read (If-Match); read it again and retry")
}

// encodings are every encoding a rendering's ETag may name.
var encodings = []rendering.Encoding{rendering.Identity, rendering.Zstd, rendering.Brotli, rendering.Gzip}

// ifMatch is the If-Match header of c, "" when there is none.
func ifMatch(c *gin.Context) string { return strings.TrimSpace(c.GetHeader("If-Match")) }

// matches reports whether the If-Match value v matches r, the resource as
// it is now: "*", or one tag of the list equal to the ETag r is sent with
// in one of its encodings, compared whole and strongly (RFC 9110 §13.1.1:
// a weak tag never matches).
func matches(v string, r *rendering.Rendering) bool {
	for _, t := range strings.Split(v, ",") {
		t = strings.TrimSpace(t)
		if t == "*" {
			return true
		}
		for _, e := range encodings {
			if t == r.ETagOf(e) {
				return true
			}
		}
	}
	return false
}
