// Package httpapi wires the gateway's Gin engine: health routes, the route
// table, and per route the rate limit (public side), authentication
// (back-office), body rules and the proxy to the owning service.
package httpapi

import (
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/services/gateway/internal/microcache"
	"github.com/doclib/services/gateway/internal/proxy"
	"github.com/doclib/services/gateway/internal/ratelimit"
	"github.com/doclib/services/gateway/internal/route"
)

// UploadFraming is allowed on top of the upload limit for the multipart
// boundaries and part headers; the media service checks the file's own
// size exactly.
const UploadFraming = 64 << 10

// Deps is what the engine needs.
type Deps struct {
	Log *slog.Logger
	// Upstreams holds one handler (a reverse proxy) per service.
	Upstreams map[route.Upstream]http.Handler
	// Cache answers the micro-cached routes (route.MicroCached) from
	// memory, filled from Origins; nil disables it. Every back-office
	// request other than a read invalidates it.
	Cache   *microcache.Cache
	Origins map[route.Upstream]microcache.Origin
	// Auth guards every /bo route.
	Auth gin.HandlerFunc
	// Limiter limits /public per client IP; nil disables it.
	Limiter *ratelimit.Limiter
	// MaxUploadSize is the largest media file accepted, in bytes.
	MaxUploadSize int64
	Health        *httpx.Health
	// TrustedProxies are the addresses (IPs or CIDRs) whose X-Forwarded-For
	// is believed when finding the client IP; empty trusts none.
	TrustedProxies []string
}

// New returns the gateway's engine.
func New(d Deps) (*gin.Engine, error) {
	if d.Auth == nil {
		return nil, fmt.Errorf("httpapi: no authentication for /bo")
	}
	e := httpx.NewEngine("gateway", d.Log)
	if err := e.SetTrustedProxies(d.TrustedProxies); err != nil {
		return nil, fmt.Errorf("httpapi: trusted proxies: %w", err)
	}
	e.Use(securityHeaders)
	if d.Health != nil {
		d.Health.Register(e)
	}

	cached := map[string]http.Handler{} // path -> its micro-cache, shared by GET and HEAD
	for _, r := range route.Table() {
		up, ok := d.Upstreams[r.Upstream]
		if !ok {
			return nil, fmt.Errorf("httpapi: no upstream %s for %s %s", r.Upstream, r.Method, r.Path)
		}
		var chain []gin.HandlerFunc
		if r.Public() && d.Limiter != nil {
			chain = append(chain, rateLimit(d.Limiter))
		}
		if r.BackOffice() {
			chain = append(chain, d.Auth)
			if !r.Read() && d.Cache != nil {
				chain = append(chain, invalidate(d.Cache))
			}
		}
		if r.MicroCached() && d.Cache != nil {
			o, ok := d.Origins[r.Upstream]
			if !ok {
				return nil, fmt.Errorf("httpapi: no origin %s for the cached route %s", r.Upstream, r.Path)
			}
			if cached[r.Path] == nil {
				cached[r.Path] = d.Cache.Route(o, up)
			}
			up = cached[r.Path]
		}
		chain = append(chain, bodyRules(r.Kind, d.MaxUploadSize), forward(up))
		e.Handle(r.Method, r.Path, chain...)
	}
	return e, nil
}

func securityHeaders(c *gin.Context) {
	c.Header("X-Content-Type-Options", "nosniff")
	c.Next()
}

func forward(h http.Handler) gin.HandlerFunc {
	return func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
}

// invalidate makes the micro-cache revalidate after a back-office write,
// whatever its answer (a timeout may still have written).
func invalidate(cache *microcache.Cache) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer cache.Invalidate()
		c.Next()
	}
}

func rateLimit(l *ratelimit.Limiter) gin.HandlerFunc {
	return func(c *gin.Context) {
		ok, wait := l.Allow(ratelimit.ClientKey(c.ClientIP()))
		if ok {
			c.Next()
			return
		}
		httpx.Fail(c, problem.New(http.StatusTooManyRequests, "rate_limited", "too many requests; try again later").
			With("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(wait))))
	}
}

// bodyRules checks the content type of routes with a body and caps every
// body while it streams: a declared length over the cap is answered 413 at
// once, without contacting the upstream.
func bodyRules(kind route.Kind, maxUpload int64) gin.HandlerFunc {
	limit := int64(httpx.MaxJSONBody)
	detail := fmt.Sprintf("a JSON body may be at most %d bytes", limit)
	if kind == route.Upload {
		limit = maxUpload + UploadFraming
		detail = fmt.Sprintf("an upload may be at most %d bytes", maxUpload)
	}
	return func(c *gin.Context) {
		ct := c.GetHeader("Content-Type")
		switch kind {
		case route.JSON:
			if !httpx.IsJSON(ct) {
				httpx.Fail(c, problem.UnsupportedMediaType("this route takes application/json"))
				return
			}
		case route.Upload:
			mt, params, err := mime.ParseMediaType(ct)
			switch {
			case err != nil || mt != "multipart/form-data":
				httpx.Fail(c, problem.UnsupportedMediaType("this route takes multipart/form-data with the file in the part named file"))
				return
			case params["boundary"] == "":
				httpx.Fail(c, problem.BadRequest("the multipart/form-data Content-Type has no boundary parameter"))
				return
			}
		}
		r := proxy.LimitBody(c.Writer, c.Request, limit, detail)
		if r == nil {
			httpx.Fail(c, problem.TooLarge(detail))
			return
		}
		c.Request = r
		c.Next()
	}
}
