package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/services/gateway/internal/route"
)

// send sends a request to base (a listener) with extra headers in pairs.
func send(t *testing.T, base, method, path string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Add(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func bearerOf(token string) string { return "Bearer " + token }

// backOfficeRoutes returns every /bo route of the table but HEAD (the GET
// beside it says the same, with a body to check) with its :id filled in.
func backOfficeRoutes() []route.Route {
	var out []route.Route
	for _, r := range route.Table() {
		if r.BackOffice() && r.Method != http.MethodHead {
			r.Path = strings.ReplaceAll(r.Path, ":id", "x1")
			out = append(out, r)
		}
	}
	return out
}

func TestPublicListenerHasNoBackOffice(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	for _, r := range backOfficeRoutes() {
		path := r.Path
		for _, token := range []string{"", token1} {
			headers := []string{}
			if token != "" {
				headers = []string{"Authorization", bearerOf(token)}
			}
			res := send(t, h.publicURL, r.Method, path, headers...)
			wantAdminListenerNamed(t, wantProblem(t, res, http.StatusNotFound, "not_found"))
		}
	}
	for _, path := range []string{"/bo", "/bo/", "/bo/nope", "/bo/documents/x/y"} {
		p := wantProblem(t, send(t, h.publicURL, "GET", path, "Authorization", bearerOf(token1)), http.StatusNotFound, "not_found")
		wantAdminListenerNamed(t, p)
	}
	for name, hits := range h.hits {
		if n := hits.Load(); n != 0 {
			t.Errorf("%s was contacted %d time(s) through the public listener's /bo", name, n)
		}
	}
}

// wantAdminListenerNamed checks that a /bo 404 of the public listener says
// where the back-office is, so a newcomer calling :8080/bo is not left
// guessing (it was a bare "no route").
func wantAdminListenerNamed(t *testing.T, p problemBody) {
	t.Helper()
	if !strings.Contains(p.Detail, "admin listener") || !strings.Contains(p.Detail, "ADMIN_ADDR") {
		t.Errorf("detail %q, want it to say the back-office is on the admin listener (ADMIN_ADDR)", p.Detail)
	}
}

func TestBothListenersServePublicRoutes(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	for _, base := range []string{h.publicURL, h.url} {
		for _, path := range []string{"/public/documents", "/public/tags-categories", "/public/medias/m1"} {
			decodeEcho(t, send(t, base, "GET", path))
		}
		for _, path := range []string{"/healthz", "/readyz"} {
			if res := send(t, base, "GET", path); res.StatusCode != http.StatusOK {
				t.Errorf("%s%s: %d, want 200", base, path, res.StatusCode)
			}
		}
		wantProblem(t, send(t, base, "GET", "/internal/tags"), http.StatusNotFound, "not_found")
	}
}

// TestUnauthorizedBeforeNotFound checks that /bo without valid credentials
// is 401 whatever the path and method, so it tells nothing about routes.
func TestUnauthorizedBeforeNotFound(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	tests := []struct {
		name, method, path string
		token              string
		want               int
		code               string
	}{
		{"unknown path", "GET", "/bo/nope", "", 401, "unauthorized"},
		{"the root", "GET", "/bo", "", 401, "unauthorized"},
		{"unknown method", "PUT", "/bo/tags/t-1", "", 401, "unauthorized"},
		{"wrong token on an unknown path", "DELETE", "/bo/nope/x", "wrong-token-0000", 401, "unauthorized"},
		{"known to an editor: 404", "GET", "/bo/nope", token1, 404, "not_found"},
		{"known to an editor: 405", "PUT", "/bo/tags/t-1", token1, 405, "method_not_allowed"},
		{"a viewer writing to an unknown path", "POST", "/bo/nope", viewerToken, 403, "forbidden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var headers []string
			if tt.token != "" {
				headers = []string{"Authorization", bearerOf(tt.token)}
			}
			res := send(t, h.url, tt.method, tt.path, headers...)
			wantProblem(t, res, tt.want, tt.code)
			if allow := res.Header.Get("Allow"); tt.want != 405 && allow != "" {
				t.Errorf("Allow = %q on a %d: it tells which methods exist", allow, tt.want)
			}
		})
	}
}

func TestRoles(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	for _, r := range backOfficeRoutes() {
		path := r.Path
		ct, body := "", io.Reader(nil)
		if !r.Read() { // a JSON body, so that a safe POST (the preview) reaches its upstream
			ct, body = "application/json", strings.NewReader(`{}`)
		}
		res := h.do(t, r.Method, path, viewerToken, ct, body)
		if r.Safe() { // a read, or the document preview: forwarded
			decodeEcho(t, res)
			continue
		}
		p := wantProblem(t, res, http.StatusForbidden, "forbidden")
		if !strings.Contains(p.Detail, "viewer") {
			t.Errorf("%s %s: detail %q does not say why", r.Method, path, p.Detail)
		}
	}
	var writes int64
	for _, r := range backOfficeRoutes() {
		if r.Safe() && r.Upstream != route.Self {
			writes++ // each safe route above reached its upstream (GET /bo/me has none)
		}
	}
	var total int64
	for _, hits := range h.hits {
		total += hits.Load()
	}
	if total != writes {
		t.Errorf("upstreams were contacted %d time(s), want %d (only the viewer's safe routes)", total, writes)
	}
	t.Run("a viewer's read of what no route serves gets 404 or 405, as an editor's", func(t *testing.T) {
		for _, tt := range []struct {
			method, path string
			want         int
			code         string
		}{
			{"GET", "/bo/nosuch", 404, "not_found"},
			{"HEAD", "/bo/nosuch", 404, ""},
			{"GET", "/bo/documents/preview", 405, "method_not_allowed"},
			{"OPTIONS", "/bo/documents", 405, "method_not_allowed"},
		} {
			res := h.do(t, tt.method, tt.path, viewerToken, "", nil)
			if tt.method == "HEAD" {
				res.Body.Close()
				if res.StatusCode != tt.want {
					t.Errorf("%s %s = %d, want %d", tt.method, tt.path, res.StatusCode, tt.want)
				}
				continue
			}
			wantProblem(t, res, tt.want, tt.code)
		}
	})
}

// TestIdentityForwarded checks what the services receive: the gateway's
// signature of the authenticated caller, never a client's header.
func TestIdentityForwarded(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	v := proof.NewVerifier(identityKey)
	forged := proof.NewSigner([]byte("a-key-the-client-made-up-0123456789")).Sign("DELETE", "/bo/medias/m1",
		identity.Caller{Name: "mallory", Role: identity.Editor})

	check := func(t *testing.T, res *http.Response, method, path, wantName string, wantRole identity.Role) {
		t.Helper()
		got := decodeEcho(t, res)
		caller, err := v.Verify(method, path, got.Header.Get(proof.Header))
		if err != nil {
			t.Fatalf("the service cannot verify the caller header %q: %v", got.Header.Get(proof.Header), err)
		}
		if caller.Name != wantName || caller.Role != wantRole {
			t.Errorf("caller = %+v, want %s (%s)", caller, wantName, wantRole)
		}
		if vs := got.Header.Values(proof.Header); len(vs) != 1 {
			t.Errorf("the service got %d caller headers, want 1", len(vs))
		}
	}
	check(t, send(t, h.url, "DELETE", "/bo/medias/m1", "Authorization", bearerOf(token1)), "DELETE", "/bo/medias/m1", "alice", identity.Editor)
	check(t, send(t, h.url, "GET", "/bo/documents", "Authorization", bearerOf(viewerToken)), "GET", "/bo/documents", "carol", identity.Viewer)
	t.Run("forged header replaced by the gateway's", func(t *testing.T) {
		res := send(t, h.url, "GET", "/bo/medias", "Authorization", bearerOf(viewerToken), proof.Header, forged)
		check(t, res, "GET", "/bo/medias", "carol", identity.Viewer)
	})
	t.Run("forged header does not lift a viewer", func(t *testing.T) {
		res := send(t, h.url, "DELETE", "/bo/medias/m1", "Authorization", bearerOf(viewerToken), proof.Header, forged)
		wantProblem(t, res, http.StatusForbidden, "forbidden")
	})
	t.Run("forged header without a token", func(t *testing.T) {
		res := send(t, h.url, "DELETE", "/bo/medias/m1", proof.Header, forged)
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
	})
	t.Run("forged header stripped on public routes", func(t *testing.T) {
		for _, base := range []string{h.url, h.publicURL} {
			got := decodeEcho(t, send(t, base, "GET", "/public/tags-categories", proof.Header, forged, "x-doclib-caller", forged))
			if vs := got.Header.Values(proof.Header); len(vs) != 0 {
				t.Errorf("the service got the client's caller header %q", vs)
			}
		}
	})
	if n := h.hits[route.Media].Load(); n != 2 {
		t.Errorf("media was contacted %d time(s), want 2 (the refused requests never reach it)", n)
	}
}

func TestAuthenticationFailureLimit(t *testing.T) {
	t.Parallel()
	h := start(t, options{failures: ratelimit.New(1.0/60, 5, 100)})
	for i := range 5 {
		wantProblem(t, h.do(t, "GET", "/bo/documents", "wrong-token-000"+string(rune('a'+i)), "", nil), 401, "unauthorized")
	}
	res := h.do(t, "GET", "/bo/documents", "wrong-token-0000", "", nil)
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if ra := res.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Errorf("Retry-After = %q, want a number of seconds", ra)
	}
	// Public routes are not affected.
	decodeEcho(t, h.do(t, "GET", "/public/documents", "", "", nil))
	if n := h.hits[route.Catalog].Load(); n != 1 {
		t.Errorf("catalog was contacted %d time(s), want 1 (the public read)", n)
	}

	// Valid tokens are never counted: a client that only ever succeeds is
	// never limited.
	h2 := start(t, options{failures: ratelimit.New(1.0/60, 5, 100)})
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < 50 && time.Now().Before(deadline); i++ {
		decodeEcho(t, h2.do(t, "GET", "/bo/documents", token1, "", nil))
	}
}

// TestConsoleOnAdminListenerOnly: the console's pages and forms reach the
// console service through the admin listener, as they are (path, method,
// body, cookies), without a bearer token (the console has its own
// sessions); the public listener does not know them.
func TestConsoleOnAdminListenerOnly(t *testing.T) {
	t.Parallel()
	h := start(t, options{console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := r.Cookie("doclib_console")
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("console " + r.Method + " " + r.URL.Path + " " + c.String() + " " + string(body)))
	})})
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, "/console", ""}, {http.MethodGet, "/console/", ""}, {http.MethodPost, "/console/sign-in", "token=t1"},
	} {
		req, _ := http.NewRequest(tc.method, h.url+tc.path, strings.NewReader(tc.body))
		req.Header.Set("Cookie", "doclib_console=s1")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := "console " + tc.method + " " + tc.path + " doclib_console=s1 " + tc.body
		if res.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("admin %s %s = %d %q, want 200 %q", tc.method, tc.path, res.StatusCode, body, want)
		}
		wantProblem(t, send(t, h.publicURL, tc.method, tc.path), http.StatusNotFound, "not_found")
	}
}

// TestConsoleToldTheClientIP: the console learns the browser's address
// from the gateway, never from the client.
func TestConsoleToldTheClientIP(t *testing.T) {
	t.Parallel()
	h := start(t, options{console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(r.Header.Get(httpx.ClientIPHeader)))
	})})
	req, _ := http.NewRequest(http.MethodPost, h.url+"/console/sign-in", strings.NewReader("token=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set(httpx.ClientIPHeader, "203.0.113.7") // forged
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(body) != "127.0.0.1" {
		t.Errorf("the console was told %q, want the connection's 127.0.0.1 (no trusted proxy)", body)
	}
}
