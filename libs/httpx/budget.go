package httpx

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

// RequestBudget is how long a request that does not stream a file may take
// in all: a dependency that is down (MongoDB first of all) makes it answer
// 503 within this, however many calls it would have made (docs/platform.md,
// "When a part is down": "answers 503 within ~5 s").
const RequestBudget = 5 * time.Second

// ErrBudgetSpent is the cause of a request's context ending because its
// budget ran out (not because its client went away).
var ErrBudgetSpent = errors.New("the request's time budget is spent")

// Budget gives each request a context that ends d after it began, so that
// every call made on its behalf shares one deadline: a database that does
// not answer costs the request d once, not its own timeout per call (two
// calls in a row made a request wait twice as long). Routes that stream a
// file take no budget; they bound the calls around the stream with
// WithBudget.
func Budget(d time.Duration) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeoutCause(c.Request.Context(), d, ErrBudgetSpent)
		defer cancel()
		c.Request = c.Request.WithContext(ctx)
		c.Next()
	}
}

// WithBudget returns ctx bounded by RequestBudget, for the calls around a
// stream (finding the file before a download, storing the record after an
// upload).
func WithBudget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, RequestBudget, ErrBudgetSpent)
}

// ClientGone reports whether r's client went away (the server canceled its
// context), as opposed to its budget running out.
func ClientGone(r *http.Request) bool {
	return errors.Is(context.Cause(r.Context()), context.Canceled)
}
