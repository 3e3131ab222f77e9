package idempotency

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
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

// Config is how the middleware keeps keys.
type Config struct {
	Store Store
	// Retention is how long a key is kept (DefaultRetention if 0).
	Retention time.Duration
	// Streamed reports the requests whose body is digested while the
	// handler reads it (an upload) instead of read first.
	Streamed func(*http.Request) bool
	Log      *slog.Logger
	Now      func() time.Time
}

// Middleware applies keys to every back-office POST (a /bo/ path) that
// sends an Idempotency-Key; other requests pass untouched. It must run
// after the caller is known (identity in the context).
func Middleware(cfg Config) gin.HandlerFunc {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return func(c *gin.Context) {
		raw := c.GetHeader(Header)
		if raw == "" || c.Request.Method != http.MethodPost || !strings.HasPrefix(c.Request.URL.Path, "/bo/") {
			c.Next()
			return
		}
		key, err := ParseKey(raw)
		if err != nil {
			httpx.Fail(c, problem.New(http.StatusBadRequest, CodeBadKey, err.Error()))
			return
		}
		caller, _ := identity.From(c.Request.Context())
		a := &attempt{cfg: cfg, c: c, id: ScopedID(caller.Name, key), owner: newOwner()}
		a.run()
	}
}

// attempt is one request carrying a key.
type attempt struct {
	cfg       Config
	c         *gin.Context
	id, owner string
	fp        *Fingerprinter
	streamed  bool
	body      *digestBody // a streamed body
	claim     *Claim      // the handler's view of the key (not streamed)
}

func (a *attempt) run() {
	r := a.c.Request
	a.streamed = a.cfg.Streamed != nil && a.cfg.Streamed(r)
	a.fp = NewFingerprinter(r.Method, r.URL.Path)
	if a.streamed {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		a.fp = NewMultipartFingerprinter(r.Method, r.URL.Path, params["boundary"])
	}
	fingerprint := ""
	if !a.streamed {
		body, err := io.ReadAll(io.LimitReader(r.Body, httpx.MaxJSONBody+1))
		if err != nil {
			a.c.AbortWithStatus(httpx.StatusClientClosedRequest)
			return
		}
		_, _ = a.fp.Write(body)
		fingerprint = a.fp.Sum()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	now := a.cfg.Now()
	rec := Record{ID: a.id, Fingerprint: fingerprint, Owner: a.owner,
		LeaseUntil: now.Add(Lease), ExpiresAt: now.Add(a.cfg.Retention)}
	ctx, cancel := httpx.WithBudget(r.Context())
	existing, claimed, err := a.cfg.Store.Claim(ctx, rec, now)
	cancel()
	switch {
	case err != nil:
		a.cfg.Log.WarnContext(r.Context(), "idempotency key not checked", "error", err.Error())
		httpx.Fail(a.c, problem.Unavailable("the idempotency keys could not be checked, so the request was not run; try again shortly").
			With("Retry-After", "5"))
	case !claimed:
		a.answerHeld(existing)
	default:
		if !a.streamed {
			a.claim = &Claim{ID: a.id, Fingerprint: fingerprint, ExpiresAt: rec.ExpiresAt}
			r = r.WithContext(WithClaim(r.Context(), a.claim))
			a.c.Request = r
		}
		a.runFirst()
	}
}

// answerHeld answers a request whose key is held by an earlier one.
func (a *attempt) answerHeld(existing Record) {
	fingerprint := existing.Fingerprint
	if existing.Done {
		fingerprint = a.fp.Sum()
		if a.streamed { // read this body too, to compare it
			if _, err := io.Copy(a.fp, a.c.Request.Body); err != nil {
				a.c.AbortWithStatus(httpx.StatusClientClosedRequest)
				return
			}
			fingerprint = a.fp.Sum()
		}
	}
	switch Decide(existing, fingerprint) {
	case InFlight:
		wait := max(1, int(time.Until(existing.LeaseUntil).Seconds()+0.5))
		httpx.Fail(a.c, problem.Conflict(CodeInFlight,
			"a request with this Idempotency-Key is still being processed; retry it once that one has been answered").
			With("Retry-After", strconv.Itoa(min(wait, 5))))
	case Mismatch:
		httpx.Fail(a.c, Reused())
	case Replay:
		h := a.c.Writer.Header()
		for k, vs := range existing.Response.Header {
			h[k] = vs
		}
		a.c.Status(existing.Response.Status)
		_, _ = a.c.Writer.Write(existing.Response.Body)
		a.c.Abort()
	}
}

// runFirst runs the handler holding the key, then stores its outcome
// before the client sees it, so a retry after an answer always finds it.
func (a *attempt) runFirst() {
	real := a.c.Writer
	buf := &bufferedWriter{ResponseWriter: real}
	a.c.Writer = buf
	if a.streamed {
		a.body = &digestBody{ReadCloser: a.c.Request.Body, fp: a.fp}
		a.c.Request.Body = a.body
	}
	defer func() {
		a.c.Writer = real
		a.finish(buf)
		buf.flushTo(real)
	}()
	a.c.Next()
}

// finish stores the outcome, or lets the key go: an answer of 500 or more
// (nothing changed, or the outcome is unknown: either way a retry must be
// able to run), a client gone, a streamed body not read to its end (its
// fingerprint is unknown), or an answer the handler said is not the key's
// (Claim.Forget).
func (a *attempt) finish(buf *bufferedWriter) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(a.c.Request.Context()), finishTimeout)
	defer cancel()
	status := buf.Status()
	var err error
	switch {
	case status >= 500 || status == httpx.StatusClientClosedRequest || (a.streamed && !a.body.eof) ||
		(a.claim != nil && a.claim.forgotten.Load()):
		err = a.cfg.Store.Release(ctx, a.id, a.owner)
	default:
		res := Response{Status: status, Header: http.Header{}, Body: bytes.Clone(buf.body.Bytes())}
		for _, k := range keptHeaders {
			if v := buf.Header().Values(k); len(v) > 0 {
				res.Header[k] = v
			}
		}
		err = a.cfg.Store.Complete(ctx, a.id, a.owner, a.fp.Sum(), res)
	}
	if err != nil {
		// The key stays in flight until its lease ends (Lease), then a
		// retry runs again.
		a.cfg.Log.WarnContext(ctx, "idempotency outcome not stored", "status", status, "error", err.Error())
	}
}

func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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
