package httpx

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/problem"
)

// BoundGrace is how long past RequestBudget Bound waits for a handler's own
// answer (a 503 from its budget) before answering for it.
const BoundGrace = 500 * time.Millisecond

// Bound answers every write (any method but GET and HEAD) h has not
// answered within d: h's answer is held until it ends, and if d passes
// first the client gets 503 outcome_unknown, as h may still commit the
// write (MongoDB can apply a write whose answer timed out, and a commit
// runs on past its request's budget so as not to leave half a write). h
// goes on in the background; its late answer is dropped. Reads, bounded
// by their budget alone, and the requests pass reports (uploads, which
// stream; a POST that changes nothing) pass untouched. This keeps the app developer guide's promise (docs/app-developer.md) of an answer within ~5 s
// whatever a write waits for.
func Bound(h http.Handler, d time.Duration, pass func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Writes(r) || pass(r) {
			h.ServeHTTP(w, r)
			return
		}
		timer := time.NewTimer(d)
		defer timer.Stop()
		hw := &heldWriter{header: http.Header{}}
		done := make(chan any, 1)
		go func() {
			defer func() { done <- recover() }()
			h.ServeHTTP(hw, r)
		}()
		select {
		case p := <-done:
			if p != nil {
				panic(p)
			}
			hw.copyTo(w)
		case <-timer.C:
			hw.abandon()
			problem.Write(w, OutcomeUnknown("the service"))
		case <-r.Context().Done():
			hw.abandon() // the client went away: nobody to answer
		}
	})
}

// OutcomeUnknown is the answer to a write whose outcome is not known: it
// may have been applied, now or later. Retrying is safe with the same
// Idempotency-Key (POST) or after reading the resource (PATCH, DELETE).
func OutcomeUnknown(what string) *problem.Problem {
	return problem.New(http.StatusServiceUnavailable, "outcome_unknown",
		what+" did not answer in time, so this write may or may not have been applied (possibly a moment later); "+
			"read the resource to find out, or send the same request again with the same Idempotency-Key").
		With("Retry-After", "5")
}

// heldWriter keeps a handler's answer until it ends.
type heldWriter struct {
	mu        sync.Mutex
	header    http.Header
	status    int
	body      bytes.Buffer
	abandoned bool
}

func (w *heldWriter) Header() http.Header { return w.header }

func (w *heldWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = code
	}
}

func (w *heldWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.abandoned {
		return len(p), nil // answered already; dropped
	}
	return w.body.Write(p)
}

func (w *heldWriter) abandon() {
	w.mu.Lock()
	w.abandoned = true
	w.body.Reset()
	w.mu.Unlock()
}

func (w *heldWriter) copyTo(dst http.ResponseWriter) {
	for k, vs := range w.header {
		dst.Header()[k] = vs
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	dst.WriteHeader(w.status)
	_, _ = dst.Write(w.body.Bytes())
}

// Writes reports whether r may change something: any method but GET and
// HEAD.
func Writes(r *http.Request) bool { return r.Method != http.MethodGet && r.Method != http.MethodHead }

// Unless runs h for every request but those skip reports, which go on to
// the next handler untouched (a middleware that concerns writes, skipped
// for a POST that changes nothing).
func Unless(skip func(*http.Request) bool, h gin.HandlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if skip(c.Request) {
			c.Next()
			return
		}
		h(c)
	}
}
