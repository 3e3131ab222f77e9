// Package oidctest is a local OpenID Connect issuer for tests: its
// discovery document, its keys (JWKS) and a signer of JWTs, on a loopback
// address known before it starts, so a test can start it late (an
// identity provider that was down).
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is a local OIDC issuer.
type Issuer struct {
	// URL is the issuer's identifier and base URL.
	URL string
	// Key signs its tokens (key id "k1").
	Key *rsa.PrivateKey
	// KeysDown makes its keys (JWKS) endpoint answer 503 while the rest
	// answers (a failed key rotation, a JWKS outage).
	KeysDown atomic.Bool
	t        testing.TB
	addr     string
	srv      *httptest.Server
}

// New returns an issuer that is serving.
func New(t testing.TB) *Issuer {
	is := Unstarted(t)
	is.Start()
	return is
}

// Unstarted returns an issuer whose address is chosen but where nothing
// listens until Start.
func Unstarted(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return &Issuer{URL: "http://" + addr, Key: key, t: t, addr: addr}
}

// Start serves the issuer on its address until the test ends.
func (is *Issuer) Start() {
	is.t.Helper()
	ln, err := net.Listen("tcp", is.addr)
	if err != nil {
		is.t.Fatalf("oidctest: listen on %s: %v", is.addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.URL, "jwks_uri": is.URL + "/keys",
			"authorization_endpoint": is.URL + "/auth", "token_endpoint": is.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		if is.KeysDown.Load() {
			http.Error(w, "keys unavailable", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &is.Key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"},
		}})
	})
	srv := httptest.NewUnstartedServer(mux)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	is.srv = srv
	is.t.Cleanup(srv.Close)
}

// Stop stops serving (an identity provider's outage); Start serves again.
func (is *Issuer) Stop() {
	if is.srv != nil {
		is.srv.Close()
		is.srv = nil
	}
}

// Sign returns claims as a JWT signed by k under the issuer's key id.
func (is *Issuer) Sign(k *rsa.PrivateKey, claims map[string]any) string {
	is.t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: "k1"}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		is.t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		is.t.Fatal(err)
	}
	jws, err := s.Sign(payload)
	if err != nil {
		is.t.Fatal(err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return out
}
