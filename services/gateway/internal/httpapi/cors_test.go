package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/doclib/services/gateway/internal/route"
)

const boOrigin = "http://localhost:5173"

// list splits a comma-separated header into its trimmed items.
func list(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for _, item := range strings.Split(v, ",") {
			out = append(out, strings.TrimSpace(item))
		}
	}
	return out
}

func hasAll(t *testing.T, h http.Header, name string, want ...string) {
	t.Helper()
	got := list(h, name)
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.EqualFold(g, w)
		}
		if !found {
			t.Errorf("%s = %q, want it to list %s", name, got, w)
		}
	}
}

func TestCORSAdmin(t *testing.T) {
	t.Parallel()
	h := start(t, options{corsOrigins: []string{boOrigin, "https://bo.example.org"}})

	t.Run("preflight from an allowed origin", func(t *testing.T) {
		for _, reqHeaders := range []string{"authorization, content-type", ""} {
			headers := []string{"Origin", boOrigin, "Access-Control-Request-Method", "POST"}
			if reqHeaders != "" {
				headers = append(headers, "Access-Control-Request-Headers", reqHeaders)
			}
			res := send(t, h.url, "OPTIONS", "/bo/documents", headers...)
			if res.StatusCode != http.StatusNoContent {
				t.Fatalf("status %d, want 204", res.StatusCode)
			}
			if got := res.Header.Get("Access-Control-Allow-Origin"); got != boOrigin {
				t.Errorf("Access-Control-Allow-Origin = %q, want the origin", got)
			}
			hasAll(t, res.Header, "Access-Control-Allow-Methods", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
			hasAll(t, res.Header, "Access-Control-Allow-Headers", "Authorization", "Content-Type", "Idempotency-Key", "If-None-Match", "Range")
			hasAll(t, res.Header, "Vary", "Origin")
			if res.Header.Get("Access-Control-Max-Age") != "600" {
				t.Errorf("Access-Control-Max-Age = %q, want 600", res.Header.Get("Access-Control-Max-Age"))
			}
			if res.Header.Get("Access-Control-Allow-Credentials") != "" || res.Header.Get("Allow") != "" {
				t.Errorf("unexpected headers %v", res.Header)
			}
		}
	})
	t.Run("preflight refused", func(t *testing.T) {
		tests := []struct{ name, origin, method, headers, detail string }{
			{"another origin", "https://evil.example", "DELETE", "", `"https://evil.example" are not allowed`},
			{"the origin's other scheme", "https://localhost:5173", "GET", "", "not allowed on the admin listener"},
			{"an unknown method", boOrigin, "TRACE", "", "cross-origin TRACE is not allowed"},
			{"an unknown header", boOrigin, "GET", "x-evil", "a requested header is not allowed"},
			{"no origin", "", "GET", "", "needs an Origin header"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				headers := []string{"Access-Control-Request-Method", tt.method}
				if tt.origin != "" {
					headers = append(headers, "Origin", tt.origin)
				}
				if tt.headers != "" {
					headers = append(headers, "Access-Control-Request-Headers", tt.headers)
				}
				res := send(t, h.url, "OPTIONS", "/bo/documents", headers...)
				p := wantProblem(t, res, http.StatusForbidden, "forbidden")
				if !strings.Contains(p.Detail, tt.detail) {
					t.Errorf("detail %q does not say %q", p.Detail, tt.detail)
				}
				for k := range res.Header {
					if strings.HasPrefix(k, "Access-Control-") {
						t.Errorf("a refused preflight carries %s", k)
					}
				}
			})
		}
	})
	t.Run("answers to an allowed origin", func(t *testing.T) {
		res := send(t, h.url, "GET", "/bo/documents", "Origin", boOrigin, "Authorization", bearerOf(token1))
		decodeEcho(t, res)
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != boOrigin {
			t.Errorf("Access-Control-Allow-Origin = %q, want the origin", got)
		}
		hasAll(t, res.Header, "Access-Control-Expose-Headers", "ETag", "Location", "Content-Disposition", "Content-Range", "Retry-After")
		hasAll(t, res.Header, "Vary", "Origin")
		// Errors too, so the script can read them.
		res = send(t, h.url, "GET", "/bo/documents", "Origin", boOrigin)
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != boOrigin {
			t.Errorf("a 401's Access-Control-Allow-Origin = %q, want the origin", got)
		}
	})
	t.Run("no CORS header for another origin", func(t *testing.T) {
		res := send(t, h.url, "GET", "/bo/documents", "Origin", "https://evil.example", "Authorization", bearerOf(token1))
		decodeEcho(t, res)
		for k := range res.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("an answer to another origin carries %s", k)
			}
		}
	})
	t.Run("OPTIONS that is not a preflight", func(t *testing.T) {
		wantProblem(t, send(t, h.url, "OPTIONS", "/public/documents"), http.StatusMethodNotAllowed, "method_not_allowed")
	})
	for name, hits := range h.hits {
		if name != "catalog" && hits.Load() != 0 {
			t.Errorf("%s was contacted %d time(s)", name, hits.Load())
		}
	}
}

func TestCORSAdminWithoutOrigins(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	res := send(t, h.url, "OPTIONS", "/bo/documents", "Origin", boOrigin, "Access-Control-Request-Method", "GET")
	wantProblem(t, res, http.StatusForbidden, "forbidden")
}

func TestCORSPublic(t *testing.T) {
	t.Parallel()
	h := start(t, options{corsOrigins: []string{boOrigin}})
	for _, base := range []string{h.publicURL, h.url} {
		res := send(t, base, "OPTIONS", "/public/documents", "Origin", "https://app.example", "Access-Control-Request-Method", "GET",
			"Access-Control-Request-Headers", "if-none-match")
		if base == h.url { // the admin listener's policy is the admin one
			wantProblem(t, res, http.StatusForbidden, "forbidden")
			continue
		}
		if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("public preflight: %d, Allow-Origin %q; want 204 and *", res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
		}
		hasAll(t, res.Header, "Access-Control-Allow-Methods", "GET", "HEAD")
		hasAll(t, res.Header, "Access-Control-Allow-Headers", "If-None-Match", "Range")
		if res.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Error("the public listener allows credentials")
		}
	}
	res := send(t, h.publicURL, "OPTIONS", "/public/documents", "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	p := wantProblem(t, res, http.StatusForbidden, "forbidden")
	if !strings.Contains(p.Detail, "cross-origin POST is not allowed on the public listener") {
		t.Errorf("detail %q", p.Detail)
	}
	res = send(t, h.publicURL, "GET", "/public/tags-categories", "Origin", "https://app.example")
	decodeEcho(t, res)
	if res.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("public answer: Access-Control-Allow-Origin %q, want *", res.Header.Get("Access-Control-Allow-Origin"))
	}
	hasAll(t, res.Header, "Access-Control-Expose-Headers", "ETag", "Content-Disposition", "Content-Range", "Retry-After")
	// The public listener still has no /bo, preflight or not.
	res = send(t, h.publicURL, "OPTIONS", "/bo/documents", "Origin", boOrigin, "Access-Control-Request-Method", "GET")
	wantProblem(t, res, http.StatusNotFound, "not_found")
}

// TestCORSMicroCached checks the public listing keeps its CORS headers when
// the micro-cache answers it.
func TestCORSMicroCached(t *testing.T) {
	t.Parallel()
	h := start(t, options{cacheTTL: time.Minute, handlers: map[route.Upstream]http.Handler{route.Catalog: http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"v1"`)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = w.Write([]byte(`[]`))
		})}})
	for i := range 3 {
		res := send(t, h.publicURL, "GET", "/public/documents", "Origin", "https://app.example")
		if res.StatusCode != 200 || res.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("request %d: %d, Allow-Origin %q; want 200 and *", i+1, res.StatusCode, res.Header.Get("Access-Control-Allow-Origin"))
		}
		hasAll(t, res.Header, "Access-Control-Expose-Headers", "ETag")
	}
}

// TestVaryIsOneLine checks Origin joins the answer's own Vary in one line.
func TestVaryIsOneLine(t *testing.T) {
	t.Parallel()
	h := start(t, options{handlers: map[route.Upstream]http.Handler{route.Taxonomy: http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Vary", "Accept-Encoding")
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = w.Write([]byte(`[]`))
		})}})
	for _, origin := range []string{"", "https://app.example"} {
		res := send(t, h.publicURL, "GET", "/public/tags-categories", "Origin", origin)
		if v := res.Header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding, Origin" {
			t.Errorf("Origin %q: Vary %q, want one line %q", origin, v, "Accept-Encoding, Origin")
		}
	}
}
