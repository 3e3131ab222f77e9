package signin

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"testing"
	"time"

	"golang.org/x/oauth2"
)

// TestAuthorizationRequest: the browser is sent with a S256 PKCE
// challenge, a nonce and the console's client and callback.
func TestAuthorizationRequest(t *testing.T) {
	t.Parallel()
	_, q := started(t, provider(newFakeProvider(t)))
	for k, want := range map[string]string{"code_challenge_method": "S256", "response_type": "code",
		"client_id": "console", "redirect_uri": "http://console/cb"} {
		if q.Get(k) != want {
			t.Errorf("%s = %q, want %q", k, q.Get(k), want)
		}
	}
	for _, k := range []string{"state", "nonce", "code_challenge"} {
		if len(q.Get(k)) < 43 {
			t.Errorf("%s = %q, want 256 bits", k, q.Get(k))
		}
	}
}

// TestFinish: the code is exchanged with the attempt's verifier; the ID
// token must carry the attempt's nonce and the client as audience; the
// session ends with the access token, less Skew.
func TestFinish(t *testing.T) {
	t.Parallel()
	f := newFakeProvider(t)
	p := provider(f)
	accessExp := time.Now().Add(5 * time.Minute).Truncate(time.Second)
	jwtAccess := f.sign(map[string]any{"exp": accessExp.Unix()})
	soon := f.sign(map[string]any{"exp": time.Now().Add(3 * time.Second).Unix()})
	for _, tc := range []struct {
		name   string
		claims func(nonce string) map[string]any
		access string
		noID   bool
		refuse bool
	}{
		{"wrong nonce", func(string) map[string]any { return idClaims("console", "another") }, "", false, true},
		{"wrong audience", func(n string) map[string]any { return idClaims("another-client", n) }, "", false, true},
		{"no ID token", func(n string) map[string]any { return idClaims("console", n) }, "", true, true},
		{"an access token expiring at once", func(n string) map[string]any { return idClaims("console", n) }, soon, false, true},
		{"signed in", func(n string) map[string]any { return idClaims("console", n) }, jwtAccess, false, false},
	} {
		a, q := started(t, p)
		f.answer(tc.claims(q.Get("nonce")), tc.access, tc.noID)
		res, err := p.Finish(context.Background(), url.Values{"state": {q.Get("state")}, "code": {"c"}}, a.Sealed)
		var refused *Refused
		if tc.refuse {
			if !errors.As(err, &refused) {
				t.Errorf("%s: %v, want *Refused", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		sum := sha256.Sum256([]byte(f.lastVerifier()))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") {
			t.Errorf("the token endpoint got code_verifier %q, not the challenge's", f.lastVerifier())
		}
		if res.AccessToken != jwtAccess || res.Name != "alice" || res.IDToken == "" {
			t.Errorf("result %+v, want alice with the access token", res)
		}
		if want := accessExp.Add(-Skew); !res.Expires.Equal(want) {
			t.Errorf("expires %v, want the access token's exp less %v: %v", res.Expires, Skew, want)
		}
	}
}

func idClaims(aud, nonce string) map[string]any {
	return map[string]any{"aud": aud, "sub": "3f1c-uuid", "nonce": nonce, "preferred_username": "alice",
		"iat": time.Now().Unix()}
}

// TestKeysDown: the provider's keys failing while an ID token is checked
// is the provider unavailable (503, try later), not a refusal (401).
func TestKeysDown(t *testing.T) {
	t.Parallel()
	f := newFakeProvider(t)
	p := provider(f)
	a, q := started(t, p)
	f.answer(idClaims("console", q.Get("nonce")), "", false)
	f.mu.Lock()
	f.keysDown = true
	f.mu.Unlock()
	_, err := p.Finish(context.Background(), url.Values{"state": {q.Get("state")}, "code": {"c"}}, a.Sealed)
	var down *Unavailable
	if !errors.As(err, &down) {
		t.Errorf("keys down: %v, want *Unavailable", err)
	}
}

// TestEndSessionURL: none before the provider was discovered; then its
// end_session_endpoint with the client, the ID token as a hint and where
// to come back.
func TestEndSessionURL(t *testing.T) {
	t.Parallel()
	f := newFakeProvider(t)
	p := provider(f)
	if u := p.EndSessionURL("idt", "http://console/sign-in"); u != "" {
		t.Errorf("before discovery: %q, want none", u)
	}
	started(t, p)
	u, err := url.Parse(p.EndSessionURL("idt", "http://console/sign-in?why=signed-out"))
	q := u.Query()
	if err != nil || u.Path != "/end" || q.Get("client_id") != "console" || q.Get("id_token_hint") != "idt" ||
		q.Get("post_logout_redirect_uri") != "http://console/sign-in?why=signed-out" {
		t.Errorf("end session URL %v, want the provider's /end with client_id, id_token_hint, post_logout_redirect_uri", u)
	}
}

// TestAShortLivedTokenStillGivesASession: under 2 minutes a token loses a
// quarter of its life, not Skew, which would end a 30 s token's session
// at once; a long-lived one loses Skew.
func TestAShortLivedTokenStillGivesASession(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ life, want time.Duration }{
		{30 * time.Second, 22500 * time.Millisecond},
		{10 * time.Second, 7500 * time.Millisecond},
		{time.Hour, time.Hour - Skew},
		{-time.Second, -time.Second}, // already expired: no later than it
	} {
		tok := &oauth2.Token{AccessToken: "opaque", Expiry: now.Add(tc.life)}
		if got := sessionEnd(tok, now).Sub(now); got != tc.want {
			t.Errorf("a token living %v gives a session of %v, want %v", tc.life, got, tc.want)
		}
	}
}

// TestBrowserURL: an authorization endpoint the browser cannot be sent to
// makes the provider unusable, said so, not a page moving on nowhere.
func TestBrowserURL(t *testing.T) {
	for raw, ok := range map[string]bool{"https://op.example/auth": true, "http://127.0.0.1:9/auth": true,
		"javascript:alert(1)": false, "data:text/html,x": false, "/auth": false, " https://op.example/auth": false} {
		if err := browserURL(raw); (err == nil) != ok {
			t.Errorf("browserURL(%q) = %v, want ok %v", raw, err, ok)
		}
	}
}
