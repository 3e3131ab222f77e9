package auth_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/doclib/services/gateway/internal/auth"
)

func TestStatic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		tokens []string
		token  string
		want   bool
	}{
		{"valid", []string{"s3cret-token"}, "s3cret-token", true},
		{"invalid", []string{"s3cret-token"}, "s3cret-tokem", false},
		{"prefix of a valid token", []string{"s3cret-token"}, "s3cret", false},
		{"missing", []string{"s3cret-token"}, "", false},
		{"first of several", []string{"alpha", "beta", "gamma"}, "alpha", true},
		{"last of several", []string{"alpha", "beta", "gamma"}, "gamma", true},
		{"none of several", []string{"alpha", "beta", "gamma"}, "delta", false},
		{"no token configured", nil, "alpha", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := auth.NewStatic(tt.tokens).Verify(context.Background(), tt.token); got != tt.want {
				t.Errorf("Verify(%q) with %d token(s) = %v, want %v", tt.token, len(tt.tokens), got, tt.want)
			}
		})
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	mw, err := auth.Middleware(auth.NewStatic([]string{"one", "two"}))
	if err != nil {
		t.Fatal(err)
	}
	e := gin.New()
	e.GET("/bo/x", mw, func(c *gin.Context) { c.Status(http.StatusNoContent) })

	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"valid", "Bearer one", http.StatusNoContent},
		{"second token", "Bearer two", http.StatusNoContent},
		{"scheme case-insensitive", "bearer two", http.StatusNoContent},
		{"invalid", "Bearer three", http.StatusUnauthorized},
		{"missing", "", http.StatusUnauthorized},
		{"basic scheme", "Basic b25lOg==", http.StatusUnauthorized},
		{"empty token", "Bearer ", http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "/bo/x", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("status = %d, want %d", rec.Code, tt.want)
			}
			if tt.want == http.StatusUnauthorized {
				if got := rec.Header().Get("WWW-Authenticate"); got == "" {
					t.Error("401 without WWW-Authenticate header")
				}
				if got := rec.Header().Get("Content-Type"); got != "application/problem+json" {
					t.Errorf("Content-Type = %q, want application/problem+json", got)
				}
			}
		})
	}
}

func TestMiddlewareRefusesNoVerifier(t *testing.T) {
	t.Parallel()
	if _, err := auth.Middleware(); err == nil {
		t.Fatal("Middleware() without verifiers must fail so /bo is never open")
	}
}

func TestOIDC(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": srv.URL, "jwks_uri": srv.URL + "/keys",
			"authorization_endpoint": srv.URL + "/auth", "token_endpoint": srv.URL + "/token",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{
			{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"},
		}})
	})

	v, err := auth.NewOIDC(context.Background(), srv.URL, "doclib-bo")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sign := func(k *rsa.PrivateKey, claims map[string]any) string {
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: "k1"}},
			(&jose.SignerOptions{}).WithType("JWT"))
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := json.Marshal(claims)
		jws, err := s.Sign(payload)
		if err != nil {
			t.Fatal(err)
		}
		out, err := jws.CompactSerialize()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	claims := func(aud string, exp time.Time) map[string]any {
		return map[string]any{"iss": srv.URL, "sub": "alice", "aud": aud, "iat": now.Add(-time.Minute).Unix(), "exp": exp.Unix()}
	}

	tests := []struct {
		name  string
		token string
		want  bool
	}{
		{"valid", sign(key, claims("doclib-bo", now.Add(time.Hour))), true},
		{"wrong audience", sign(key, claims("someone-else", now.Add(time.Hour))), false},
		{"expired", sign(key, claims("doclib-bo", now.Add(-time.Hour))), false},
		{"signed by another key", sign(other, claims("doclib-bo", now.Add(time.Hour))), false},
		{"not a JWT", "dev-token", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := v.Verify(context.Background(), tt.token); got != tt.want {
				t.Errorf("Verify = %v, want %v", got, tt.want)
			}
		})
	}
}
