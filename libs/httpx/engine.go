// Package httpx holds the HTTP conventions every service of the document
// library follows: the Gin engine set-up, problem+json errors, request ids,
// access logs, JSON body binding, health routes, and serving with a graceful
// shutdown.
package httpx

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/github.com/gin-gonic/gin/otelgin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/telemetry"
)

func init() { gin.SetMode(gin.ReleaseMode) }

// RequestIDHeader carries the id of a request across services and into logs.
const RequestIDHeader = "X-Request-ID"

// ClientIPHeader carries, from the gateway to the console, the address of
// the browser as the gateway found it (TRUSTED_PROXIES): the console limits
// failed sign-ins per browser with it. The gateway sets it on every
// request it forwards there, replacing whatever a client sent.
const ClientIPHeader = "X-Doclib-Client-IP"

// NewEngine returns a Gin engine with the middleware every service uses:
// request id, request metrics (see metrics.go; served by metrics.Register),
// panic recovery into a 500 problem, OpenTelemetry spans (health routes
// left out), an access log, and problem answers for unknown routes (404)
// and known routes with another method (405 with Allow).
//
// Spans are made only when telemetry exports them (telemetry.Enabled):
// otherwise an inbound W3C trace context is only carried into the request's
// context (for the logs and the calls this request makes). Building spans
// and their attributes that nobody exports was, measured, most of the
// garbage of a cached listing request.
func NewEngine(service string, log *slog.Logger) *gin.Engine {
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.ContextWithFallback = true // c.Done/c.Value follow the request's context
	// An unknown path is a 404 problem, not a redirect to a path with or
	// without a trailing slash.
	e.RedirectTrailingSlash = false
	// Gin believes every X-Forwarded-For by default; services that sit
	// behind a known proxy (the gateway behind an ingress) set their own.
	_ = e.SetTrustedProxies(nil)
	trace := carryTraceContext
	if telemetry.Enabled() {
		trace = otelgin.Middleware(service, otelgin.WithGinFilter(notProbe))
	}
	e.Use(requestID(), measure, recovery(log), trace, accessLog(log))
	e.NoRoute(func(c *gin.Context) { Fail(c, problem.NotFound("no route "+c.Request.URL.Path)) })
	e.NoMethod(func(c *gin.Context) {
		Fail(c, problem.New(http.StatusMethodNotAllowed, "method_not_allowed",
			"method "+c.Request.Method+" is not allowed here; allowed: "+c.Writer.Header().Get("Allow")))
	})
	return e
}

// carryTraceContext puts an inbound W3C trace context into the request's
// context without starting a span.
func carryTraceContext(c *gin.Context) {
	if c.Request.Header.Get("Traceparent") != "" {
		ctx := otel.GetTextMapPropagator().Extract(c.Request.Context(), propagation.HeaderCarrier(c.Request.Header))
		c.Request = c.Request.WithContext(ctx)
	}
	c.Next()
}

// notProbe reports whether c is a request of a client, not a probe or a
// metrics scrape: those are left out of traces, access logs and the
// request metrics.
func notProbe(c *gin.Context) bool {
	p := c.Request.URL.Path
	return p != "/healthz" && p != "/readyz" && p != metrics.Path
}

// Fail answers c with p and stops the handler chain.
func Fail(c *gin.Context, p *problem.Problem) {
	_ = c.Error(p) // recorded for the access log and the span status
	problem.Write(c.Writer, p)
	c.Abort()
}

// requestIDKey is RequestIDHeader in net/http's canonical form: headers are
// read and set by map key here, without canonicalizing the name on every
// request (profiled: with the regular expression below it replaced, a
// tenth of the middleware's time).
const requestIDKey = "X-Request-Id"

// validRequestID reports whether id is 1-128 of A-Za-z0-9._:- (a byte loop:
// a regular expression cost more than the rest of the check).
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9', b == '.', b == '_', b == ':', b == '-':
		default:
			return false
		}
	}
	return true
}

// requestID keeps a well-formed inbound X-Request-ID, or makes one, and
// echoes it on the response.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		var id string
		if v := c.Request.Header[requestIDKey]; len(v) > 0 {
			id = v[0]
		}
		if !validRequestID(id) {
			id = NewRequestID()
			c.Request.Header[requestIDKey] = []string{id}
		}
		c.Writer.Header()[requestIDKey] = []string{id}
		c.Next()
	}
}

// NewRequestID returns a random 128-bit id in hex.
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recovery turns a panic into a 500 problem. http.ErrAbortHandler (a client
// gone mid-stream, raised by httputil.ReverseProxy) is re-raised, as
// net/http expects, so nothing is written on a dead connection.
func recovery(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(v)
			}
			log.ErrorContext(c, "panic", "panic", v, "path", c.FullPath())
			if !c.Writer.Written() {
				Fail(c, problem.Internal("the server failed to handle this request"))
			}
			c.Abort()
		}()
		c.Next()
	}
}
