package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/services/gateway/internal/auth/oidctest"
)

// start runs the gateway until t ends (cancelled as SIGTERM does), and
// returns a channel closed once run has returned, and run's error then.
// The cleanup waits for run only as long as a shutdown takes, so a test
// that failed, even after run returned on its own, ends instead of
// hanging; it reports run's error unless the test failed already (the
// test reports an early one itself).
func start(t *testing.T) (<-chan struct{}, func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	var err error
	go func() {
		defer close(stopped)
		err = run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
			if err != nil && !t.Failed() {
				t.Errorf("run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("run has not returned 30 s after its context was cancelled")
		}
	})
	return stopped, func() error { <-stopped; return err }
}

// TestStartsWhileTheIdentityProviderIsDown runs the gateway with an OIDC
// issuer that is not there yet, as a pod restarted during an identity
// provider's outage: it starts, is ready, serves the public routes and
// the static tokens at once, answers a JWT 503 with Retry-After, and
// accepts it once the issuer answers.
func TestStartsWhileTheIdentityProviderIsDown(t *testing.T) {
	is := oidctest.Unstarted(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("ETag", `"e"`)
		_, _ = io.WriteString(w, "[]")
	}))
	t.Cleanup(upstream.Close)
	var addrs [3]string // the public and admin listeners, and a NATS that is down
	for i := range addrs {
		a, err := devserver.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = a
	}
	public, admin, natsDown := addrs[0], addrs[1], addrs[2]
	for k, v := range map[string]string{
		"TAXONOMY_URL": upstream.URL, "CATALOG_URL": upstream.URL, "MEDIA_URL": upstream.URL, "WEBHOOK_URL": upstream.URL,
		"BO_API_TOKENS": "ci:viewer:ci-token-0001", "IDENTITY_SIGNING_KEY": "k-0123456789abcdef0123456789abcdef",
		"OIDC_ISSUER_URL": is.URL, "OIDC_AUDIENCE": "doclib-bo",
		"PUBLIC_ADDR": public, "ADMIN_ADDR": admin, "SHUTDOWN_DRAIN_DELAY": "0s", "LOG_LEVEL": "error",
		"NATS_URL": "nats://" + natsDown, // the live streams wait for it; nothing else does
	} {
		t.Setenv(k, v)
	}
	stopped, runErr := start(t)

	get := func(url, authorization string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("GET", url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if authorization != "" {
			req.Header.Set("Authorization", authorization)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil
		}
		_ = res.Body.Close()
		return res
	}
	deadline := time.Now().Add(10 * time.Second)
	for res := get("http://"+admin+"/readyz", ""); res == nil || res.StatusCode != 200; res = get("http://"+admin+"/readyz", "") {
		select {
		case <-stopped:
			t.Fatalf("the gateway stopped with the issuer down: %v", runErr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway is not ready 10 s after its start, with the issuer down")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res := get("http://"+public+"/public/documents", ""); res == nil || res.StatusCode != 200 {
		t.Errorf("a public route with the issuer down: %v, want 200", res)
	}
	if res := get("http://"+admin+"/bo/documents", "Bearer ci-token-0001"); res == nil || res.StatusCode != 200 {
		t.Errorf("a static token with the issuer down: %v, want 200", res)
	}
	jwt := "Bearer " + is.Sign(is.Key, map[string]any{"iss": is.URL, "sub": "alice", "aud": "doclib-bo",
		"exp": time.Now().Add(time.Hour).Unix(), "roles": "editor"})
	if res := get("http://"+admin+"/bo/documents", jwt); res == nil || res.StatusCode != 503 || res.Header.Get("Retry-After") == "" {
		t.Errorf("a JWT with the issuer down: %v, want 503 with Retry-After", res)
	}

	is.Start()
	deadline = time.Now().Add(30 * time.Second) // discovery is retried every 10 s at most
	for res := get("http://"+admin+"/bo/documents", jwt); res == nil || res.StatusCode != 200; res = get("http://"+admin+"/bo/documents", jwt) {
		if res != nil && res.StatusCode != 503 {
			t.Fatalf("a JWT while the issuer comes back: %d, want 503 then 200", res.StatusCode)
		}
		if time.Now().After(deadline) {
			t.Fatal("a JWT is still refused 30 s after the issuer came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
