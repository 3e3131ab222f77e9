// Package bodyread owns how long the gateway waits for a client's request
// body. A body a route does not take is neither read nor forwarded; a JSON
// body must arrive whole within a short timeout; an upload must keep up a
// minimum average rate. Whenever the gateway answers before it has read a
// body to its end (a 401 without a token, a 415, a 413), it closes the
// connection after the answer instead of draining the body first, which
// is what Go's server does by default for bodies under 256 KiB and what
// let a client trickling a declared body hold a connection for
// HTTP_READ_TIMEOUT.
package bodyread

import (
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/gateway/internal/route"
)

// Config is how long bodies may take.
type Config struct {
	// Timeout is how long a whole body of a route that is not an upload may
	// take to arrive, from the end of the request's headers; also the grace
	// an upload gets before its rate counts.
	Timeout time.Duration
	// UploadMinRate is the lowest average rate, in bytes per second, an
	// upload body may arrive at once its grace has passed.
	UploadMinRate int64
	// Max caps any body's time (the server's HTTP_READ_TIMEOUT), 0 for none.
	Max time.Duration
}

// KindOf says what body the route matched by c takes; ok is false for a
// request that matched no route (404, 405), which is answered without its
// body.
type KindOf func(c *gin.Context) (kind route.Kind, ok bool)

// Guard is engine-wide middleware applying cfg to every request that
// declares a body.
func Guard(cfg Config, kindOf KindOf) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			c.Next()
			return
		}
		kind, ok := kindOf(c)
		if !ok || kind == route.NoBody {
			refuse(c)
			return
		}
		start := time.Now()
		rc := http.NewResponseController(c.Writer)
		b := &body{ReadCloser: r.Body, rc: rc, deadline: cfg.deadline(kind, start)}
		if err := rc.SetReadDeadline(b.deadline(0)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			refuse(c) // the connection cannot be bounded: do not read from it
			return
		}
		c.Request = shallow(r, b)
		c.Writer = &closeUnlessRead{ResponseWriter: c.Writer, body: b}
		c.Next()
	}
}

// deadline returns when a body of kind begun at start must have been read
// to its end, given the bytes read so far.
func (cfg Config) deadline(kind route.Kind, start time.Time) func(read int64) time.Time {
	limit := time.Time{}
	if cfg.Max > 0 {
		limit = start.Add(cfg.Max)
	}
	capped := func(t time.Time) time.Time {
		if !limit.IsZero() && t.After(limit) {
			return limit
		}
		return t
	}
	if cfg.Timeout <= 0 { // not configured (tests): only Max, if any
		return func(int64) time.Time { return limit }
	}
	if (kind != route.Upload && kind != route.ImportJSON) || cfg.UploadMinRate <= 0 {
		fixed := capped(start.Add(cfg.Timeout))
		return func(int64) time.Time { return fixed }
	}
	return func(read int64) time.Time {
		earned := time.Duration(float64(read) / float64(cfg.UploadMinRate) * float64(time.Second))
		return capped(start.Add(cfg.Timeout + earned))
	}
}

// refuse serves a request whose route takes no body without reading or
// forwarding the body it declared, and closes the connection after the
// answer (what follows on it is the body, not another request).
func refuse(c *gin.Context) {
	c.Header("Connection", "close")
	// Go's server drains an unread body under 256 KiB before it closes the
	// connection: a read deadline already passed makes that drain end at
	// once (only reads are bounded; the answer is still written).
	_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now())
	c.Request = shallow(c.Request, http.NoBody)
	c.Request.ContentLength = 0
	c.Request.Header.Del("Content-Length")
	c.Request.TransferEncoding = nil
	c.Next()
}

// shallow returns a copy of r reading body: the server keeps its own r,
// whose body it checks after the answer.
func shallow(r *http.Request, body io.ReadCloser) *http.Request {
	out := r.WithContext(r.Context())
	out.Header = r.Header.Clone()
	out.Body = body
	return out
}

// body moves the connection's read deadline as an upload earns time, and
// lifts it once the body is read: the server's background read, which
// watches for the client going away, must not time out while the upstream
// takes its time to answer.
type body struct {
	io.ReadCloser
	rc       *http.ResponseController
	deadline func(read int64) time.Time
	read     int64 // only the reading goroutine touches it
	done     atomic.Bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.read > 0 {
		_ = b.rc.SetReadDeadline(b.deadline(b.read))
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if errors.Is(err, io.EOF) {
		b.done.Store(true)
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// closeUnlessRead adds Connection: close to an answer begun before the
// body was read to its end, so the server closes the connection rather
// than draining the body first.
type closeUnlessRead struct {
	gin.ResponseWriter
	body *body
}

func (w *closeUnlessRead) beforeHeader() {
	if !w.ResponseWriter.Written() && !w.body.done.Load() {
		w.ResponseWriter.Header().Set("Connection", "close")
	}
}

func (w *closeUnlessRead) WriteHeader(code int) { w.beforeHeader(); w.ResponseWriter.WriteHeader(code) }
func (w *closeUnlessRead) WriteHeaderNow()      { w.beforeHeader(); w.ResponseWriter.WriteHeaderNow() }
func (w *closeUnlessRead) Flush()               { w.beforeHeader(); w.ResponseWriter.Flush() }

func (w *closeUnlessRead) Write(p []byte) (int, error) {
	w.beforeHeader()
	return w.ResponseWriter.Write(p)
}

func (w *closeUnlessRead) WriteString(s string) (int, error) {
	w.beforeHeader()
	return w.ResponseWriter.WriteString(s)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *closeUnlessRead) Unwrap() http.ResponseWriter { return w.ResponseWriter }
