// Package crossorigin owns the gateway's CORS policies (CONTRACT.md §7),
// one per listener, on github.com/rs/cors: the public listener lets any
// origin read (GET, HEAD; Access-Control-Allow-Origin: *, no credentials);
// the admin listener lets only the configured origins (a browser
// back-office) do everything. A preflight the policy accepts is answered
// 204 before authentication (a preflight carries no credentials); one it
// refuses is a 403 problem saying why; any other answer gets CORS headers
// only for an allowed origin.
package crossorigin

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/rs/cors"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
)

// MaxAge is how long a browser may keep a preflight's answer.
const MaxAge = 600 // seconds

// Exposed are the response headers a cross-origin script may read besides
// the CORS-safelisted ones.
var Exposed = []string{"ETag", "Location", "Content-Disposition", "Content-Range", "Retry-After", "X-Request-ID", "Accept-Ranges"}

var exposed = strings.Join(Exposed, ", ")

// readHeaders are the request headers a reader sends: conditional and
// range requests, and a correlation id.
var readHeaders = []string{"If-None-Match", "If-Modified-Since", "If-Range", "Range", "X-Request-ID"}

// Policy is one listener's CORS policy.
type Policy struct {
	name    string // for the problem detail
	origins []string
	any     bool
	methods []string
	headers []string
	handler http.Handler // rs/cors in front of a no-op: it only sets headers
}

// Public is the public listener's policy: GET and HEAD from any origin.
func Public() *Policy {
	return newPolicy("the public listener", nil, true, []string{http.MethodGet, http.MethodHead}, readHeaders)
}

// Admin is the admin listener's policy: every method, from origins only.
// No origin means no cross-origin call at all.
func Admin(origins []string) *Policy {
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	// If-Match: a back-office write conditional on the version read;
	// Idempotency-Key: a POST that is safe to retry.
	headers := append([]string{"Authorization", "Content-Type", "If-Match", "Idempotency-Key"}, readHeaders...)
	return newPolicy("the admin listener", origins, false, methods, headers)
}

func newPolicy(name string, origins []string, any bool, methods, headers []string) *Policy {
	p := &Policy{name: name, origins: origins, any: any, methods: methods, headers: headers}
	opts := cors.Options{
		AllowedMethods:     methods,
		AllowedHeaders:     headers,
		ExposedHeaders:     Exposed,
		MaxAge:             MaxAge,
		AllowCredentials:   false, // bearer tokens are set by the script, never cookies
		OptionsPassthrough: true,  // this package answers preflights itself
	}
	if any {
		opts.AllowedOrigins = []string{"*"}
	} else {
		// A function, not AllowedOrigins: rs/cors reads an empty list as
		// "every origin".
		opts.AllowOriginFunc = func(origin string) bool { return slices.Contains(origins, origin) }
	}
	c := cors.New(opts)
	p.handler = c.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return p
}

// Middleware applies the policy. Install it engine-wide, before
// authentication, so preflights of every path are answered.
func (p *Policy) Middleware(c *gin.Context) {
	p.handler.ServeHTTP(c.Writer, c.Request)
	r := c.Request
	h := c.Writer.Header()
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		if h.Get("Access-Control-Allow-Origin") != "" {
			// rs/cors canonicalises the names (Etag); keep the usual spelling.
			h.Set("Access-Control-Expose-Headers", exposed)
		}
		c.Writer = &varyWriter{ResponseWriter: c.Writer}
		c.Next()
		return
	}
	h.Del("Allow") // set by Gin for its 405, which a preflight never gets
	if h.Get("Access-Control-Allow-Origin") == "" {
		httpx.Fail(c, problem.Forbidden(p.refusal(r)))
		return
	}
	// rs/cors echoes what was asked; list all that is allowed instead, so
	// one preflight's answer serves the next request too.
	h.Set("Access-Control-Allow-Methods", strings.Join(p.methods, ", "))
	h.Set("Access-Control-Allow-Headers", strings.Join(p.headers, ", "))
	c.AbortWithStatus(http.StatusNoContent)
}

// refusal says why a preflight was refused.
func (p *Policy) refusal(r *http.Request) string {
	origin := r.Header.Get("Origin")
	switch {
	case origin == "":
		return "a preflight request needs an Origin header"
	case !p.any && !slices.Contains(p.origins, origin):
		return "cross-origin requests from " + strconv.Quote(origin) + " are not allowed on " + p.name + " (CORS_ALLOWED_ORIGINS)"
	case !slices.Contains(p.methods, strings.ToUpper(r.Header.Get("Access-Control-Request-Method"))):
		return "cross-origin " + r.Header.Get("Access-Control-Request-Method") + " is not allowed on " + p.name +
			"; allowed: " + strings.Join(p.methods, ", ")
	default:
		return "a requested header is not allowed on " + p.name + "; allowed: " + strings.Join(p.headers, ", ")
	}
}

// ParseOrigins checks CORS_ALLOWED_ORIGINS: each an origin as a browser
// sends it (scheme://host[:port], http or https, no path, no wildcard).
func ParseOrigins(list []string) ([]string, error) {
	var errs []error
	for _, o := range list {
		u, err := url.Parse(o)
		switch {
		case o == "*":
			errs = append(errs, errors.New("* is not allowed: list the back-office's origins"))
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
			errs = append(errs, fmt.Errorf("%q is not an origin (scheme://host[:port])", o))
		case u.Path == "/":
			errs = append(errs, fmt.Errorf("%q: an origin has no trailing slash", o))
		case o != strings.ToLower(u.Scheme)+"://"+strings.ToLower(u.Host):
			errs = append(errs, fmt.Errorf("%q: write it in lower case, as browsers send it", o))
		}
	}
	return list, errors.Join(errs...)
}

// varyWriter writes the Vary header as one line. rs/cors adds "Origin"
// before the answer is made, the answer adds "Accept-Encoding" (a
// rendering, or the service's, copied by the proxy); two lines mean the
// same to HTTP, but a client reading one value (Header.Get) would see
// only "Origin".
type varyWriter struct {
	gin.ResponseWriter
	merged bool
}

// Unwrap lets http.ResponseController reach the connection (a live
// stream sets its own deadlines).
func (w *varyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *varyWriter) merge() {
	if w.merged {
		return
	}
	w.merged = true
	h := w.Header()
	v := h["Vary"]
	if len(v) < 2 {
		return
	}
	var names []string
	origin := false
	for _, line := range v {
		for _, n := range strings.Split(line, ",") {
			n = strings.TrimSpace(n)
			switch {
			case n == "":
			case strings.EqualFold(n, "Origin"):
				origin = true
			case !slices.ContainsFunc(names, func(s string) bool { return strings.EqualFold(s, n) }):
				names = append(names, n)
			}
		}
	}
	if origin {
		names = append(names, "Origin")
	}
	h["Vary"] = []string{strings.Join(names, ", ")}
}

func (w *varyWriter) WriteHeader(code int) {
	w.merge()
	w.ResponseWriter.WriteHeader(code)
}

func (w *varyWriter) WriteHeaderNow() {
	w.merge()
	w.ResponseWriter.WriteHeaderNow()
}

func (w *varyWriter) Write(b []byte) (int, error) {
	w.merge()
	return w.ResponseWriter.Write(b)
}

func (w *varyWriter) WriteString(s string) (int, error) {
	w.merge()
	return w.ResponseWriter.WriteString(s)
}
