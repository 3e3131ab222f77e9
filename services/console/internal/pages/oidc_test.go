package pages

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/doclib/services/console/internal/signin"
)

// discoveryOnly is a provider that answers its discovery document only:
// enough to start sign-ins.
func discoveryOnly(t *testing.T) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "jwks_uri": srv.URL + "/keys",
			"authorization_endpoint": srv.URL + "/auth", "token_endpoint": srv.URL + "/token"})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func withProvider(issuer string) func(*Config) {
	return func(cfg *Config) {
		cfg.OIDC = signin.New(signin.Config{Issuer: issuer, ClientID: "console",
			RedirectURL: "http://console.test" + signin.CallbackPath, Scopes: []string{"openid"}})
	}
}

// TestStartOIDC: a POST starts a sign-in with its own HttpOnly, Lax,
// 10-minute cookie and a page moving on to the provider; a GET starts
// nothing; a provider down is the 503 page.
func TestStartOIDC(t *testing.T) {
	t.Parallel()
	op := discoveryOnly(t)
	c := newConsole(t, accepting, withProvider(op.URL))
	res := c.do("POST", "/console/sign-in/provider", "")
	body, _ := io.ReadAll(res.Body)
	m := regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=([^"]+)">`).FindStringSubmatch(string(body))
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("start: %d, want a page moving on to the provider by itself; page %.300s", res.StatusCode, body)
	}
	to, _ := url.Parse(html.UnescapeString(m[1]))
	if !strings.HasPrefix(to.String(), op.URL+"/auth?") || !strings.Contains(string(body), `href="`+m[1]+`"`) {
		t.Errorf("start moves on to %q, want the provider's authorization endpoint, with a link to it", to)
	}
	// Not a redirect: the CSP's form-action stays 'self', and a provider
	// may send the browser on to a third origin.
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self';") {
		t.Errorf("start page CSP %q, want form-action 'self'", csp)
	}
	cks := res.Cookies()
	want := attemptCookie + signin.CookieSuffix(to.Query().Get("state"))
	if len(cks) != 1 || cks[0].Name != want || !cks[0].HttpOnly || cks[0].SameSite != http.SameSiteLaxMode ||
		cks[0].MaxAge != 600 || cks[0].Path != "/console/sign-in/" {
		t.Errorf("attempt cookies %+v, want one %s, HttpOnly, Lax, Max-Age 600, Path /console/sign-in/", cks, want)
	}
	if res := c.do("GET", "/console/sign-in/provider", ""); res.StatusCode < 400 {
		t.Errorf("a GET started a sign-in: %d", res.StatusCode)
	}
	op.Close()
	down := newConsole(t, accepting, withProvider(op.URL))
	res = down.do("POST", "/console/sign-in/provider", "")
	if body, _ := io.ReadAll(res.Body); res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "cannot be reached") {
		t.Errorf("provider down: %d, want 503 saying so", res.StatusCode)
	}
}

// TestCallbackWithoutItsAttempt: a callback whose state names no cookie
// is 400 and clears nothing; one whose cookie was changed is 400 and its
// cookie cleared.
func TestCallbackWithoutItsAttempt(t *testing.T) {
	t.Parallel()
	c := newConsole(t, accepting, withProvider(discoveryOnly(t).URL))
	res := c.do("GET", signin.CallbackPath+"?state=other&code=x", "")
	if res.StatusCode != http.StatusBadRequest || len(res.Cookies()) != 0 {
		t.Errorf("a state of no attempt: %d, cookies %v; want 400 clearing nothing", res.StatusCode, res.Cookies())
	}
	name := attemptCookie + signin.CookieSuffix("s")
	res = c.do("GET", signin.CallbackPath+"?state=s&code=x", "", &http.Cookie{Name: name, Value: "forged"})
	cks := res.Cookies()
	if res.StatusCode != http.StatusBadRequest || len(cks) != 1 || cks[0].Name != name || cks[0].MaxAge >= 0 {
		t.Errorf("a forged attempt: %d, cookies %v; want 400 clearing %s", res.StatusCode, cks, name)
	}
}
