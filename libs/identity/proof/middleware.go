package proof

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/problem"
)

// Middleware makes a service trust only the gateway on /bo: every /bo path,
// whether a route serves it or not, needs a valid header, or is 401; a
// viewer's request other than GET and HEAD is 403 (the gateway refuses it
// first; this is the second line). The caller goes into the request's
// context. Install it engine-wide (engine.Use) so it runs before Gin's 404
// and 405 answers. Other paths pass untouched. safe, if given, reports the
// requests other than GET and HEAD that change nothing (a preview): a
// viewer may send them too.
func Middleware(v *Verifier, safe ...func(*http.Request) bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		path := c.Request.URL.Path
		if path != "/bo" && !strings.HasPrefix(path, "/bo/") {
			c.Next()
			return
		}
		caller, err := v.Verify(c.Request.Method, c.Request.URL.EscapedPath(), c.GetHeader(Header))
		if err != nil {
			c.Writer.Header().Del("Allow") // set by Gin for a 405 still to come
			httpx.Fail(c, problem.Unauthorized(err.Error()))
			return
		}
		if caller.Role == identity.Viewer && httpx.Writes(c.Request) && !anyOf(safe, c.Request) {
			c.Writer.Header().Del("Allow")
			httpx.Fail(c, problem.Forbidden("the role viewer may only read (GET, HEAD)"))
			return
		}
		c.Request = c.Request.WithContext(identity.With(c.Request.Context(), caller))
		c.Next()
	}
}

// anyOf reports whether one of preds holds for r.
func anyOf(preds []func(*http.Request) bool, r *http.Request) bool {
	for _, p := range preds {
		if p(r) {
			return true
		}
	}
	return false
}
