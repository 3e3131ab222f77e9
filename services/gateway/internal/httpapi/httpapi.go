// Package httpapi wires the gateway's two Gin engines, one per listener:
// the public one (/public/**, never /bo/**) and the admin one (/bo/** and
// everything public). Each has the health routes, the route table, and per
// route the rate limit (public side), authentication and roles
// (back-office, decided before the route is looked up, so an unknown /bo
// path or method without credentials is 401), body rules and the proxy to
// the owning service.
package httpapi

import (
	"fmt"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/services/gateway/internal/bodyread"
	"github.com/doclib/services/gateway/internal/crossorigin"
	"github.com/doclib/services/gateway/internal/microcache"
	"github.com/doclib/services/gateway/internal/proxy"
	"github.com/doclib/services/gateway/internal/reference"
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
	// Auth guards every /bo path of the admin listener, known or not.
	Auth Authenticator
	// Signer signs the authenticated caller into the header the services
	// trust (proof.Header).
	Signer *proof.Signer
	// Limiter limits /public per client IP; nil disables it.
	Limiter *ratelimit.Limiter
	// MaxUploadSize is the largest media file accepted, in bytes.
	MaxUploadSize int64
	Health        *httpx.Health
	// Reference serves /openapi.json, /openapi.yaml and /docs on both
	// listeners; nil leaves them out.
	Reference *reference.Reference
	// CORSOrigins may call the admin listener from a browser; the public
	// listener lets any origin read.
	CORSOrigins []string
	// BodyRead bounds how long request bodies may take; its zero value
	// sets no deadline but still answers without draining unread bodies.
	BodyRead bodyread.Config
	// TrustedProxies are the addresses (IPs or CIDRs) whose X-Forwarded-For
	// is believed when finding the client IP; empty trusts none.
	TrustedProxies []string
	// Console serves the back-office console's pages (/console/**) on the
	// admin listener only; nil leaves them out (404).
	Console http.Handler
	// PublicChanges and BOChanges serve the live streams of changes
	// (GET /public/changes, /bo/changes); they find the client's address
	// in httpx.ClientIPHeader. nil answers 503.
	PublicChanges, BOChanges http.Handler
}

// Engines are the gateway's two listeners.
type Engines struct {
	// Public serves /public/** and the health routes; /bo/** is 404 there,
	// so a public ingress cannot reach the back-office even when its paths
	// are misconfigured.
	Public *gin.Engine
	// Admin serves /bo/** and everything Public serves. Routes only an
	// operator should reach (/metrics) are added to it.
	Admin *gin.Engine
}

// Authenticator decides who a /bo request comes from, or answers it with
// a problem (401, 403, 429).
type Authenticator interface {
	Authenticate(c *gin.Context, safe bool) (identity.Caller, *problem.Problem)
}

// New returns the gateway's engines.
func New(d Deps) (Engines, error) {
	if d.Auth == nil || d.Signer == nil {
		return Engines{}, fmt.Errorf("httpapi: no authentication for /bo")
	}
	d.Upstreams = maps.Clone(d.Upstreams)
	if d.Upstreams == nil {
		d.Upstreams = map[route.Upstream]http.Handler{}
	}
	d.Upstreams[route.Self] = http.HandlerFunc(whoAmI)
	d.Upstreams[route.Changes] = http.NotFoundHandler() // one per audience: changesChain
	public, err := newEngine(d, "public")
	if err != nil {
		return Engines{}, err
	}
	admin, err := newEngine(d, "admin")
	if err != nil {
		return Engines{}, err
	}
	// Preflights carry no credentials: CORS answers them before the
	// back-office guard.
	public.Use(hideBackOffice, crossorigin.Public().Middleware)
	admin.Use(crossorigin.Admin(d.CORSOrigins).Middleware, guardBackOffice(d.Auth, d.Signer))
	for _, e := range []*gin.Engine{public, admin} {
		if d.Health != nil {
			d.Health.Register(e)
		}
		if d.Reference != nil {
			d.Reference.Register(e)
		}
	}
	cached := map[string]http.Handler{} // path -> its micro-cache, shared by GET and HEAD
	for _, r := range route.Table() {
		chain, err := routeChain(d, r, cached)
		if err != nil {
			return Engines{}, err
		}
		if !r.BackOffice() {
			public.Handle(r.Method, r.Path, chain...)
		}
		admin.Handle(r.Method, r.Path, chain...)
	}
	if d.Console != nil {
		// The console's own pages and forms, never on the public listener.
		admin.Any(ConsolePath, tellClientIP, guardConsoleBody, forward(d.Console))
		admin.Any(ConsolePath+"/*page", tellClientIP, guardConsoleBody, forward(d.Console))
	}
	return Engines{Public: public, Admin: admin}, nil
}

// ConsolePath is where the admin listener serves the console.
const ConsolePath = "/console"

func newEngine(d Deps, listener string) (*gin.Engine, error) {
	log := d.Log.With("listener", listener)
	e := httpx.NewEngine("gateway", log)
	if err := e.SetTrustedProxies(d.TrustedProxies); err != nil {
		return nil, fmt.Errorf("httpapi: trusted proxies: %w", err)
	}
	e.Use(securityHeaders, dropForgedIdentity, bodyread.Guard(d.BodyRead, kindOf))
	return e, nil
}

// routeKinds is the body kind of every route of the table, by method and
// Gin path.
var routeKinds = func() map[string]route.Kind {
	m := map[string]route.Kind{}
	for _, r := range route.Table() {
		m[r.Method+" "+r.Path] = r.Kind
	}
	return m
}()

// safeRoutes are the table's routes that change nothing (route.Safe), by
// method and Gin path: a viewer may send them.
var safeRoutes = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range route.Table() {
		m[r.Method+" "+r.Path] = r.Safe()
	}
	return m
}()

// kindOf is the body kind of the route c matched; a request that matched
// none of the table's routes (health, reference, 404, 405) takes no body.
// The console's forms (sign-in, documents with a file picked) are read
// as uploads are: at least the upload rate, within the read timeout; the
// console caps their size itself.
func kindOf(c *gin.Context) (route.Kind, bool) {
	if p := c.FullPath(); p == ConsolePath || p == ConsolePath+"/*page" {
		return route.Upload, true
	}
	k, ok := routeKinds[c.Request.Method+" "+c.FullPath()]
	return k, ok
}

// routeChain is what serves route r: the rate limit on public routes, the
// micro-cache's invalidation after a back-office write, the micro-cache on
// the cached routes, body rules and the proxy.
func routeChain(d Deps, r route.Route, cached map[string]http.Handler) ([]gin.HandlerFunc, error) {
	up, ok := d.Upstreams[r.Upstream]
	if !ok {
		return nil, fmt.Errorf("httpapi: no upstream %s for %s %s", r.Upstream, r.Method, r.Path)
	}
	var chain []gin.HandlerFunc
	if r.Public() && d.Limiter != nil {
		chain = append(chain, rateLimit(d.Limiter))
	}
	if r.Upstream == route.Changes {
		return append(chain, httpx.StrictQuery, tellClientIP, forward(changesHandler(d, r))), nil
	}
	// A query that does not parse is 400, not forwarded without the parts
	// the proxy drops.
	chain = append(chain, httpx.StrictQuery)
	if r.BackOffice() && r.Writes() && d.Cache != nil {
		chain = append(chain, invalidate(d.Cache))
	}
	if r.MicroCached() && d.Cache != nil {
		o, ok := d.Origins[r.Upstream]
		if !ok {
			return nil, fmt.Errorf("httpapi: no origin %s for the cached route %s", r.Upstream, r.Path)
		}
		if cached[r.Path] == nil {
			if q := r.CacheQuery(); q != "" {
				cached[r.Path] = d.Cache.RouteByQuery(o, q, up)
			} else {
				cached[r.Path] = d.Cache.Route(o, up)
			}
		}
		up = cached[r.Path]
	}
	return append(chain, bodyRules(r.Kind, d.MaxUploadSize), forward(up)), nil
}

// changesHandler is the live stream route r serves.
func changesHandler(d Deps, r route.Route) http.Handler {
	h := d.PublicChanges
	if r.BackOffice() {
		h = d.BOChanges
	}
	if h == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			problem.Write(w, problem.New(http.StatusServiceUnavailable, "stream_unavailable", "the live stream is not available on this gateway"))
		})
	}
	return h
}

// isBackOffice reports whether path is under /bo, whether or not a route
// serves it.
func isBackOffice(path string) bool {
	return path == "/bo" || strings.HasPrefix(path, "/bo/")
}

// hideBackOffice answers 404 for every /bo path on the public listener,
// before authentication, so the public side reaches nothing of the
// back-office; the detail names the listener that serves it, for the
// newcomer who called the wrong port.
func hideBackOffice(c *gin.Context) {
	if isBackOffice(c.Request.URL.Path) {
		httpx.Fail(c, problem.NotFound("no route "+c.Request.URL.Path+" on the public listener: the back-office "+
			"API (/bo) is served on the gateway's admin listener only (ADMIN_ADDR; port 8090 by default)"))
		return
	}
	c.Next()
}

// guardBackOffice authenticates every /bo path of the admin listener and
// signs the caller for the service. It is engine-wide middleware, so it
// also runs before Gin's 404 and 405 answers: a request without valid
// credentials learns nothing about which paths and methods exist.
func guardBackOffice(auth Authenticator, signer *proof.Signer) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !isBackOffice(c.Request.URL.Path) {
			c.Next()
			return
		}
		// Every read is safe, matched or not (an unmatched request has no
		// FullPath): a viewer's unknown path or method gets Gin's 404/405.
		safe := !httpx.Writes(c.Request) || c.Request.Method == http.MethodOptions ||
			safeRoutes[c.Request.Method+" "+c.FullPath()]
		caller, p := auth.Authenticate(c, safe)
		if p != nil {
			c.Writer.Header().Del("Allow") // set by Gin for a 405 that is not given
			httpx.Fail(c, p)
			return
		}
		c.Request = c.Request.WithContext(identity.With(c.Request.Context(), caller))
		c.Request.Header.Set(proof.Header, signer.Sign(c.Request.Method, c.Request.URL.EscapedPath(), caller))
		c.Next()
	}
}

// tellClientIP tells the console the browser's address, as found here
// (a client's own value is replaced).
func tellClientIP(c *gin.Context) {
	c.Request.Header.Set(httpx.ClientIPHeader, c.ClientIP())
	c.Next()
}

// dropForgedIdentity removes an identity header a client sent: only the
// gateway's own signature may reach a service.
func dropForgedIdentity(c *gin.Context) {
	c.Request.Header.Del(proof.Header)
	c.Next()
}

func securityHeaders(c *gin.Context) {
	c.Header("X-Content-Type-Options", "nosniff")
	c.Next()
}

// guardConsoleBody marks a console form's body, as bodyRules marks a /bo
// body, so that one cut short by BODY_READ_TIMEOUT or UPLOAD_MIN_RATE is
// answered 408 rather than as the console's failure (504, or 499). The
// console caps its forms' size itself (MEDIA_MAX_UPLOAD_SIZE).
func guardConsoleBody(c *gin.Context) {
	c.Request = proxy.LimitBody(c.Writer, c.Request, math.MaxInt64, "")
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
	switch kind {
	case route.Upload:
		limit = maxUpload + UploadFraming
		detail = fmt.Sprintf("an upload may be at most %d bytes", maxUpload)
	case route.ImportJSON:
		limit = httpx.MaxImportJSONBody
		detail = fmt.Sprintf("a JSON body may be at most %d bytes", limit)
	}
	return func(c *gin.Context) {
		ct := c.GetHeader("Content-Type")
		switch kind {
		case route.JSON, route.ImportJSON:
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
