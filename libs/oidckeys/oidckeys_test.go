package oidckeys_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/doclib/libs/oidckeys"
)

// jwt is a token that parses, signed by a key id no key set holds.
const jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.e30.c2ln" // {"alg":"RS256","kid":"k1"}.{}.sig

func TestWatch(t *testing.T) {
	for _, tt := range []struct {
		name       string
		status     int
		wantFailed bool
	}{
		{"the keys endpoint fails", http.StatusServiceUnavailable, true},
		{"the keys do not verify the token", http.StatusOK, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(`{"keys":[]}`))
			}))
			defer srv.Close()
			ctx, failed := oidckeys.Watch(context.Background())
			if _, err := oidckeys.New(srv.Client(), srv.URL).VerifySignature(ctx, jwt); err == nil {
				t.Fatal("verified with no key")
			}
			if got := failed() != nil; got != tt.wantFailed {
				t.Errorf("failed() = %v, want a fetch failure: %v", failed(), tt.wantFailed)
			}
		})
	}
}
