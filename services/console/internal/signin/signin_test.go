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

// TestAttempts: an attempt is used once, only by the browser holding its
// binding, and only for AttemptTTL.
func TestAttempts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	p := New(Config{})
	p.now = func() time.Time { return now }
	put := func(state, binding string) {
		if err := p.put(state, attempt{binding: binding, expires: now.Add(AttemptTTL)}); err != nil {
			t.Fatal(err)
		}
	}
	put("s1", "b1")
	if _, ok := p.take("s1", "another-browser"); ok {
		t.Error("another browser's binding took the attempt")
	}
	if _, ok := p.take("s1", "b1"); ok {
		t.Error("an attempt was taken after a failed try: it must be used once")
	}
	put("s2", "b2")
	if _, ok := p.take("s2", "b2"); !ok {
		t.Error("the right browser did not take its attempt")
	}
	if _, ok := p.take("s2", "b2"); ok {
		t.Error("an attempt was taken twice")
	}
	put("s3", "b3")
	now = now.Add(AttemptTTL)
	if _, ok := p.take("s3", "b3"); ok {
		t.Error("an expired attempt was taken")
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
	if _, _, err := p.Start(context.Background()); !errors.As(err, &down) {
		t.Errorf("Start with the provider down: %v, want *Unavailable", err)
	}
	if _, err := p.Finish(context.Background(), url.Values{"state": {"x"}, "code": {"c"}}, "b"); !errors.Is(err, ErrAttempt) {
		t.Errorf("Finish of an unknown state: %v, want ErrAttempt", err)
	}
}
