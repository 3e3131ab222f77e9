package signin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// provider is a Provider of the fake f.
func provider(f *fakeProvider) *Provider {
	return New(Config{Issuer: f.URL, ClientID: "console", RedirectURL: "http://console/cb", Scopes: []string{"openid"}})
}

// started starts an attempt and returns it with its authorization
// request's query.
func started(t *testing.T, p *Provider) (Attempt, url.Values) {
	t.Helper()
	a, err := p.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	return a, u.Query()
}

// TestAttemptsKeptByTheBrowser: the server keeps nothing per attempt (the
// old table of 10,000 pending attempts could be filled by anyone), so
// many attempts started elsewhere never stop one from finishing; an
// attempt opens only with its own state, in the process that sealed it,
// unchanged and in time.
func TestAttemptsKeptByTheBrowser(t *testing.T) {
	t.Parallel()
	f := newFakeProvider(t)
	p := provider(f)
	for i := 0; i < 10_001; i++ {
		if _, err := p.Start(context.Background()); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	a, q := started(t, p)
	if a.Cookie != CookieSuffix(q.Get("state")) {
		t.Errorf("cookie suffix %q, want CookieSuffix of the state", a.Cookie)
	}
	other, _ := started(t, p)
	now := time.Now()
	for _, tc := range []struct {
		name, sealed, state string
		at                  time.Time
		ok                  bool
	}{
		{"its own", a.Sealed, q.Get("state"), now, true},
		{"another attempt's cookie", other.Sealed, q.Get("state"), now, false},
		{"changed", a.Sealed[:len(a.Sealed)-2] + "AA", q.Get("state"), now, false},
		{"no cookie", "", q.Get("state"), now, false},
		{"no state", a.Sealed, "", now, false},
		{"too late", a.Sealed, q.Get("state"), now.Add(AttemptTTL + time.Second), false},
	} {
		p.now = func() time.Time { return tc.at }
		if _, ok := p.open(tc.sealed, tc.state); ok != tc.ok {
			t.Errorf("%s: opened %v, want %v", tc.name, ok, tc.ok)
		}
	}
	if _, ok := provider(f).open(a.Sealed, q.Get("state")); ok {
		t.Error("another process (a restart) opened the attempt")
	}
}

// TestProviderDown: a provider that cannot be reached is Unavailable,
// and a callback without a live attempt is ErrAttempt before anything is
// asked of the provider.
func TestProviderDown(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	p := New(Config{Issuer: srv.URL, ClientID: "console", RedirectURL: "http://console/cb", Scopes: []string{"openid"}})
	var down *Unavailable
	if _, err := p.Start(context.Background()); !errors.As(err, &down) {
		t.Errorf("Start with the provider down: %v, want *Unavailable", err)
	}
	if _, err := p.Finish(context.Background(), url.Values{"state": {"x"}, "code": {"c"}}, "b"); !errors.Is(err, ErrAttempt) {
		t.Errorf("Finish of an unknown state: %v, want ErrAttempt", err)
	}
}
