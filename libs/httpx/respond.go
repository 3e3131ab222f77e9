package httpx

import (
	"errors"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/validation"
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
	if c.Request.Context().Err() != nil {
		c.AbortWithStatus(StatusClientClosedRequest)
		return
	}
	p := toProblem(err)
	problem.Write(c.Writer, p)
	c.Abort()
}

// CommonProblem maps the errors every service shares: invalid input is 422
// listing every failing field; a database that cannot be reached is 503
// naming what is unavailable; anything else is a 500 whose detail says only
// that the request failed.
func CommonProblem(err error, database string) *problem.Problem {
	var verrs validation.Errors
	switch {
	case errors.As(err, &verrs):
		fields := make([]problem.FieldError, len(verrs))
		for i, f := range verrs {
			fields[i] = problem.FieldError{Field: f.Field, Message: f.Message}
		}
		return problem.Validation("the request has invalid fields", fields)
	case mongox.IsUnavailable(err):
		return problem.Unavailable("the "+database+" is unavailable; try again shortly").With("Retry-After", "5")
	default:
		return problem.Internal("the request could not be completed because of an internal error")
	}
}
