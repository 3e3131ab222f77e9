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

// newConsole serves the pages with gateway as the /bo API and oidc (may
// be nil) as the provider.
func newConsole(t *testing.T, gateway http.Handler, oidc *signin.Provider) console {
	t.Helper()
	gw := httptest.NewServer(gateway)
	t.Cleanup(gw.Close)
	base, _ := url.Parse(gw.URL)
	sessions := session.NewStore(time.Hour)
	p, err := New(Config{API: boclient.New(base, 5*time.Second), Sessions: sessions,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), TokenSignIn: true, OIDC: oidc,
		Origin: "http://console.test", Timeout: 5 * time.Second})
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
