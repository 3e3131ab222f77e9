package httpx

import (
	"fmt"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/problem"
)

// StrictQuery answers 400 to a request whose query does not parse (an
// invalid escape such as %zz, a semicolon): Go's own parsing drops such a
// parameter silently, so `?cursor=%zz` would read as no cursor at all and
// change what the request means (a sync from a cursor becoming a full
// first sync), here or at the service a proxy forwards it to (Go's reverse
// proxy drops it too).
func StrictQuery(c *gin.Context) {
	if _, err := url.ParseQuery(c.Request.URL.RawQuery); err != nil {
		Fail(c, problem.BadRequest(fmt.Sprintf("the query does not parse: %v", err)))
		return
	}
	c.Next()
}
