package idempotency

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/problem"
)

// Problem codes of the middleware's own answers.
const (
	CodeBadKey   = "invalid_idempotency_key"
	CodeInFlight = "idempotency_key_in_use"
	CodeReused   = "idempotency_key_reused"
)

// Reused is the answer to a key used for another request: 422.
func Reused() *problem.Problem {
	return problem.New(http.StatusUnprocessableEntity, CodeReused,
		"this Idempotency-Key was used for another request (another path or body); use a new key for a new request")
}

// DefaultRetention is how long a key is kept by default.
const DefaultRetention = 24 * time.Hour

// keptHeaders are the response headers replayed with a stored outcome.
var keptHeaders = []string{"Content-Type", "Location", "ETag", "Last-Modified", "Content-Location"}

// finishTimeout bounds storing an outcome once the request's own context
// may be done.
const finishTimeout = 10 * time.Second

// digestBody digests a streamed body as the handler reads it.
type digestBody struct {
	io.ReadCloser
	fp  *Fingerprinter
	eof bool
}

func (b *digestBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	_, _ = b.fp.Write(p[:n])
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// bufferedWriter holds a handler's answer (headers go to the real
// writer's map, status and body are kept) until its outcome is stored.
type bufferedWriter struct {
	gin.ResponseWriter
	status int
	body   bytes.Buffer
}

func (w *bufferedWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *bufferedWriter) WriteHeaderNow() { w.WriteHeader(http.StatusOK) }
func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}
func (w *bufferedWriter) WriteString(s string) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.WriteString(s)
}
func (w *bufferedWriter) Status() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}
func (w *bufferedWriter) Written() bool { return w.status != 0 }
func (w *bufferedWriter) Size() int     { return w.body.Len() }
func (w *bufferedWriter) Flush()        {}

func (w *bufferedWriter) flushTo(real gin.ResponseWriter) {
	if w.status == 0 {
		return
	}
	real.WriteHeader(w.status)
	_, _ = real.Write(w.body.Bytes())
}

// LoadRetention reads IDEMPOTENCY_KEY_RETENTION, how long a key is kept
// (24h by default; at least a minute, so that a retry after an answer
// lost in transit finds it).
func LoadRetention(env *config.Env) time.Duration {
	d := env.Duration("IDEMPOTENCY_KEY_RETENTION", DefaultRetention)
	if d < time.Minute {
		env.Check("IDEMPOTENCY_KEY_RETENTION", errors.New("must be at least 1m"))
	}
	return d
}
