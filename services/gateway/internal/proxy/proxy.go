// Package proxy owns how the gateway talks to the services behind it: the
// streaming reverse proxy, the shared transport, the request-body limits
// enforced while streaming, the mapping of transport failures to problem
// answers, and the readiness checks of the upstreams.
package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/telemetry"
)

// NewTransport returns the transport shared by every proxy: short dial
// timeout, at most headerTimeout to wait for an upstream's response
// headers once the request is sent (an upload's duration does not count),
// no transparent compression (Range, ETag and Content-Length pass
// untouched), and OpenTelemetry client spans with trace-context
// propagation when telemetry exports them (otherwise an inbound traceparent
// is forwarded as any other header). Environment proxies are ignored:
// upstreams are internal.
func NewTransport(headerTimeout time.Duration) http.RoundTripper {
	if !telemetry.Enabled() {
		return newBaseTransport(headerTimeout)
	}
	return otelhttp.NewTransport(newBaseTransport(headerTimeout))
}

func newBaseTransport(headerTimeout time.Duration) *http.Transport {
	dialer := &net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext: dialer.DialContext,
		// Keep as many idle connections per service as there are concurrent
		// requests: below that, every burst closes and reopens connections
		// (thousands of sockets in TIME_WAIT under load, measured).
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   512,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   5 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: headerTimeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
	}
}

// New returns a streaming reverse proxy to the service name at target. The
// path and query are forwarded unchanged, X-Forwarded-* are set from the
// client connection, X-Request-ID is kept so the upstream logs the same id,
// and the Authorization header is never forwarded: the gateway is the one
// place that authenticates.
func New(name string, target *url.URL, transport http.RoundTripper, log *slog.Logger) *httputil.ReverseProxy {
	log = log.With("upstream", name)
	return &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
			r.Out.Header.Del("Authorization")
			r.Out.Header.Del("Proxy-Authorization")
			// The gateway's own server answers the client's Expect. Passed on,
			// the upstream's "100 Continue" would reach ReverseProxy's 1xx
			// handling, which clears the headers the gateway already set.
			r.Out.Header.Del("Expect")
		},
		Transport: transport,
		ModifyResponse: func(res *http.Response) error {
			// The gateway sets these on every response itself; copying the
			// upstream's would repeat them.
			res.Header.Del(httpx.RequestIDHeader)
			res.Header.Del("X-Content-Type-Options")
			return nil
		},
		ErrorHandler: ErrorHandler(name, log),
		ErrorLog:     slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BufferPool:   copyBuffers,
	}
}

// copyBuffers are the buffers bodies are copied through: without a pool,
// ReverseProxy allocates 32 KiB per request, garbage that the collector
// then pays for on every hot listing request.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// ErrorHandler answers a request whose exchange with the service name
// failed: 413 when its body went over the limit, 408 when it did not
// arrive in time, nothing (499 in the log)
// when the client went away, otherwise the problem Problem gives.
func ErrorHandler(name string, log *slog.Logger) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) {
		if g, ok := r.Context().Value(guardKey{}).(*guard); ok {
			switch {
			case g.tripped.Load():
				problem.Write(w, problem.TooLarge(g.detail))
				return
			case g.slow.Load():
				w.Header().Set("Connection", "close") // what is left of the body is not read
				problem.Write(w, problem.New(http.StatusRequestTimeout, "request_timeout",
					"the request body did not arrive in time (see BODY_READ_TIMEOUT and UPLOAD_MIN_RATE)"))
				return
			}
		}
		if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
			log.DebugContext(r.Context(), "client went away before the upstream answered", "path", r.URL.Path)
			w.WriteHeader(httpx.StatusClientClosedRequest)
			return
		}
		p := Problem(name, err)
		log.WarnContext(r.Context(), "upstream request failed", "path", r.URL.Path, "status", p.Status,
			"request_id", r.Header.Get(httpx.RequestIDHeader), "error", err.Error())
		problem.Write(w, p)
	}
}

// Problem maps a transport failure talking to the service name: 502 when it
// cannot be reached (refused, unknown host, dial timeout), 504 when it did
// not answer in time, 503 for any other failure (the connection broke, the
// answer was not HTTP). The detail names the service, never the error.
func Problem(name string, err error) *problem.Problem {
	var opErr *net.OpError
	var netErr net.Error
	switch {
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return problem.New(http.StatusBadGateway, "bad_gateway", "the "+name+" service could not be reached").
			With("Retry-After", "5")
	case errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return problem.New(http.StatusGatewayTimeout, "upstream_timeout", "the "+name+" service did not answer in time")
	default:
		return problem.Unavailable("the "+name+" service is unavailable").With("Retry-After", "5")
	}
}

// guard records that a request body went over its limit, or did not
// arrive in time, so the error handler answers 413 or 408 rather than a
// gateway error.
type guard struct {
	tripped atomic.Bool
	slow    atomic.Bool
	detail  string
}

type guardKey struct{}

type guardedBody struct {
	io.ReadCloser
	g *guard
}

func (b guardedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooBig *http.MaxBytesError
	switch {
	case err == nil:
	case errors.As(err, &tooBig):
		b.g.tripped.Store(true)
	case errors.Is(err, os.ErrDeadlineExceeded): // bodyread's deadline
		b.g.slow.Store(true)
	}
	return n, err
}

// LimitBody caps r's body at limit bytes while it streams to the upstream.
// It returns nil when the declared Content-Length is already over, for the
// caller to answer 413 without contacting the upstream; detail is the 413
// problem's detail.
func LimitBody(w http.ResponseWriter, r *http.Request, limit int64, detail string) *http.Request {
	if r.ContentLength > limit {
		return nil
	}
	if r.Body == nil || r.Body == http.NoBody {
		return r
	}
	g := &guard{detail: detail}
	r = r.WithContext(context.WithValue(r.Context(), guardKey{}, g))
	r.Body = guardedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit), g: g}
	return r
}
