package pages

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/session"
	"github.com/doclib/services/console/internal/signin"
)

// console is the pages in front of a fake gateway.
type console struct {
	h        http.Handler
	sessions *session.Store
}

// newConsole serves the pages with gateway as the /bo API; change, when
// not nil, changes their Config.
func newConsole(t *testing.T, gateway http.Handler, change func(*Config)) console {
	t.Helper()
	gw := httptest.NewServer(gateway)
	t.Cleanup(gw.Close)
	base, _ := url.Parse(gw.URL)
	sessions := session.NewStore(time.Hour)
	cfg := Config{API: boclient.New(base, 5*time.Second), Sessions: sessions,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), TokenSignIn: true,
		Origin: "http://console.test", Timeout: 5 * time.Second}
	if change != nil {
		change(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	e := gin.New()
	e.Use(Headers)
	p.Register(e)
	return console{h: e, sessions: sessions}
}

// do sends a request with the cookies given and returns the answer.
func (c console) do(method, path, form string, cookies ...*http.Cookie) *http.Response {
	req := httptest.NewRequest(method, path, strings.NewReader(form))
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	w := httptest.NewRecorder()
	c.h.ServeHTTP(w, req)
	return w.Result()
}

// refusing is a gateway that answers every /bo call 401.
var refusing = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"status":401,"code":"unauthorized","detail":"the bearer token is not valid"}`)
})

// TestRefusedTokenEndsTheSession: a page whose /bo call is answered 401
// (the token was revoked, or expired sooner than said) ends the session,
// so the cookie no longer passes for signed in.
func TestRefusedTokenEndsTheSession(t *testing.T) {
	t.Parallel()
	c := newConsole(t, refusing, nil)
	s := c.sessions.Create("revoked", "alice", session.Editor)
	res := c.do("GET", "/console/tags", "", &http.Cookie{Name: cookieName, Value: s.ID})
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/console/sign-in?why=expired" {
		t.Errorf("a page refused by the API: %d to %q, want 303 to the sign-in", res.StatusCode, loc)
	}
	if _, ok := c.sessions.Get(s.ID); ok {
		t.Error("the session whose token the API refused is still live")
	}
}

// TestSignInFailuresLogged: every failed sign-in at the provider is
// logged at Warn with its reason.
func TestSignInFailuresLogged(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	p := &Pages{cfg: Config{Log: slog.New(slog.NewTextHandler(&buf, nil))}}
	for _, err := range []error{signin.ErrAttempt, &signin.Refused{Reason: "the ID token was not issued for this sign-in (nonce)"},
		&signin.Unavailable{Err: errors.New("connection refused")}} {
		p.providerProblem(err)
	}
	p.meProblem(&boclient.APIError{Status: http.StatusUnauthorized, Detail: "the bearer token is not valid"})
	for _, want := range []string{"sign_in_not_started", "(nonce)", "connection refused", "token_not_accepted"} {
		if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), want) {
			t.Errorf("the log does not say %q at Warn:\n%s", want, buf.String())
		}
	}
}

// accepting is a gateway whose /bo/me names alice, an editor.
var accepting = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"name":"alice","role":"editor"}`)
})

// signIn signs in with a token and returns the session cookie set.
func (c console) signIn(t *testing.T, cookies ...*http.Cookie) *http.Cookie {
	t.Helper()
	res := c.do("POST", "/console/sign-in", "token=dev-token", cookies...)
	for _, ck := range res.Cookies() {
		if strings.HasSuffix(ck.Name, cookieName) && ck.MaxAge > 0 {
			return ck
		}
	}
	t.Fatalf("sign-in: %d, no session cookie", res.StatusCode)
	return nil
}

// TestSignInAgainEndsThePrevious: a second sign-in in the same browser
// ends the session its cookie named.
func TestSignInAgainEndsThePrevious(t *testing.T) {
	t.Parallel()
	c := newConsole(t, accepting, nil)
	first := c.signIn(t)
	second := c.signIn(t, first)
	if _, ok := c.sessions.Get(first.Value); ok {
		t.Error("the first session is still live after signing in again")
	}
	if _, ok := c.sessions.Get(second.Value); !ok {
		t.Error("the second session is not live")
	}
}

// TestHostCookies: behind TLS the session cookie is __Host- (Secure,
// Path=/, no Domain), and that is the cookie the console reads.
func TestHostCookies(t *testing.T) {
	t.Parallel()
	c := newConsole(t, accepting, func(cfg *Config) { cfg.SecureCookie = true })
	ck := c.signIn(t)
	if ck.Name != "__Host-"+cookieName || !ck.Secure || ck.Path != "/" || ck.Domain != "" || !ck.HttpOnly {
		t.Errorf("session cookie %+v, want __Host-%s, Secure, HttpOnly, Path=/, no Domain", ck, cookieName)
	}
	if res := c.do("GET", "/console/settings", "", ck); res.StatusCode == http.StatusSeeOther {
		t.Errorf("the __Host- cookie does not sign in: sent to %s", res.Header.Get("Location"))
	}
	if res := c.do("GET", "/console/settings", "", &http.Cookie{Name: cookieName, Value: ck.Value}); res.StatusCode != http.StatusSeeOther {
		t.Errorf("a cookie without the prefix signed in behind TLS: %d", res.StatusCode)
	}
}

// The static files are served, their directories never listed.
func TestStaticFilesAreNotListed(t *testing.T) {
	t.Parallel()
	p, err := New(Config{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	p.Register(r)
	for path, want := range map[string]int{
		"/console/static/console.js": http.StatusOK,
		"/console/static/":           http.StatusNotFound,
		"/console/static/nope.js":    http.StatusNotFound,
	} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s = %d %.80q, want %d", path, rec.Code, rec.Body.String(), want)
		}
	}
}

// TestDevelopmentTokensOnlyInDevelopment: the sign-in page names the
// development tokens only where the deployment says it is a development
// one (make dev).
func TestDevelopmentTokensOnlyInDevelopment(t *testing.T) {
	t.Parallel()
	for _, dev := range []bool{false, true} {
		c := newConsole(t, refusing, func(cfg *Config) { cfg.Development = dev })
		res := c.do("GET", "/console/sign-in", "")
		body, _ := io.ReadAll(res.Body)
		if got := strings.Contains(string(body), "dev-token"); got != dev {
			t.Errorf("development %v: the sign-in page names dev-token: %v", dev, got)
		}
	}
}
