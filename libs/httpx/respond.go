package httpx

import (
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/problem"
)

// TimeFormat is how every date is written (CONTRACT.md §1): RFC 3339 in UTC
// with milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z"

// FormatTime writes t in TimeFormat.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// StatusClientClosedRequest is logged when the client went away before the
// answer (nginx's convention); nobody receives it.
const StatusClientClosedRequest = 499

// Abort answers c with the problem toProblem makes of err, recording err
// itself for the access log and the span (never for the client). When the
// client has gone away, the failure is its cancellation, not the service's:
// the access log shows 499 instead of a 5xx.
func Abort(c *gin.Context, err error, toProblem func(error) *problem.Problem) {
	_ = c.Error(err)
	if ClientGone(c.Request) {
		c.AbortWithStatus(StatusClientClosedRequest)
		return
	}
	p := toProblem(err)
	problem.Write(c.Writer, p)
	c.Abort()
}
