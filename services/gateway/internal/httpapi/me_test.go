package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/doclib/services/gateway/internal/auth"
	"github.com/doclib/services/gateway/internal/auth/oidctest"
)

// TestMe checks GET /bo/me answers the caller's name and role, for static
// tokens and OIDC JWTs, and is guarded as every /bo route.
func TestMe(t *testing.T) {
	t.Parallel()
	is := oidctest.New(t)
	jwt := auth.NewOIDC(is.URL, "doclib-bo", "roles")
	if err := jwt.Discover(context.Background()); err != nil {
		t.Fatal(err)
	}
	signed := func(roles any) string {
		now := time.Now()
		return is.Sign(is.Key, map[string]any{"iss": is.URL, "sub": "dora", "aud": "doclib-bo",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "roles": roles})
	}
	h := start(t, options{verifiers: []auth.Verifier{jwt}})
	tests := []struct {
		name, method, token string
		status              int
		want                string // the JSON body, or the problem's code
	}{
		{"static editor", "GET", token1, 200, `{"name":"alice","role":"editor"}`},
		{"static viewer", "GET", viewerToken, 200, `{"name":"carol","role":"viewer"}`},
		{"JWT editor", "GET", signed([]string{"editor"}), 200, `{"name":"dora","role":"editor"}`},
		{"JWT viewer", "GET", signed("viewer"), 200, `{"name":"dora","role":"viewer"}`},
		{"JWT without a role", "GET", signed("other-app"), 403, "forbidden"},
		{"no token", "GET", "", 401, "unauthorized"},
		{"wrong token", "GET", "not-a-token-of-ours", 401, "unauthorized"},
		{"a viewer's POST", "POST", viewerToken, 403, "forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := h.do(t, tc.method, "/bo/me", tc.token, "", nil)
			if tc.status != 200 {
				wantProblem(t, res, tc.status, tc.want)
				return
			}
			raw, _ := io.ReadAll(res.Body)
			var got, want map[string]any
			_ = json.Unmarshal([]byte(tc.want), &want)
			if res.StatusCode != 200 || json.Unmarshal(raw, &got) != nil || !equalJSON(got, want) {
				t.Fatalf("%d %s, want 200 %s", res.StatusCode, raw, tc.want)
			}
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control %q, want no-store", cc)
			}
		})
	}
	if res := h.do(t, "HEAD", "/bo/me", token1, "", nil); res.StatusCode != 200 {
		t.Errorf("HEAD /bo/me: %d, want 200", res.StatusCode)
	}
	res, err := http.Get(h.publicURL + "/bo/me")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 404 {
		t.Errorf("GET /bo/me on the public listener: %d, want 404", res.StatusCode)
	}
}

func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
