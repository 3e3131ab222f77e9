package main

import (
	"strings"
	"testing"

	"github.com/doclib/libs/config"
)

// TestLoadSignIn: the console needs a way to sign in, and the OpenID
// provider's settings are checked at start-up.
func TestLoadSignIn(t *testing.T) {
	t.Parallel()
	base := map[string]string{"CONSOLE_API_URL": "http://gateway:8090", "CONSOLE_ORIGIN": "https://admin.example.org"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" for no error, else a part of it
	}{
		{"no sign-in at all", with(), "CONSOLE_TOKEN_SIGNIN"},
		{"tokens", with("CONSOLE_TOKEN_SIGNIN", "true"), ""},
		{"provider alone", with("CONSOLE_OIDC_ISSUER_URL", "https://id.example.org", "CONSOLE_OIDC_CLIENT_ID", "console"), ""},
		{"provider without a client", with("CONSOLE_OIDC_ISSUER_URL", "https://id.example.org"), "CONSOLE_OIDC_CLIENT_ID"},
		{"scopes without openid", with("CONSOLE_OIDC_ISSUER_URL", "https://id.example.org", "CONSOLE_OIDC_CLIENT_ID", "console",
			"CONSOLE_OIDC_SCOPES", "profile"), "CONSOLE_OIDC_SCOPES"},
		{"issuer not a URL", with("CONSOLE_OIDC_ISSUER_URL", "id.example.org", "CONSOLE_OIDC_CLIENT_ID", "console"), "CONSOLE_OIDC_ISSUER_URL"},
		{"a client without an issuer", with("CONSOLE_TOKEN_SIGNIN", "true", "CONSOLE_OIDC_CLIENT_ID", "console"), "CONSOLE_OIDC_CLIENT_ID"},
		{"a secret without an issuer", with("CONSOLE_TOKEN_SIGNIN", "true", "CONSOLE_OIDC_CLIENT_SECRET", "s"), "CONSOLE_OIDC_CLIENT_SECRET"},
		{"an http issuer", with("CONSOLE_OIDC_ISSUER_URL", "http://id.example.org", "CONSOLE_OIDC_CLIENT_ID", "console"), "must be https"},
		{"an http loopback issuer", with("CONSOLE_OIDC_ISSUER_URL", "http://127.0.0.1:9998", "CONSOLE_OIDC_CLIENT_ID", "console"), ""},
		{"negative failure limit", with("CONSOLE_TOKEN_SIGNIN", "true", "CONSOLE_SIGNIN_FAILURE_LIMIT", "-1"), "CONSOLE_SIGNIN_FAILURE_LIMIT"},
		{"a short session key", with("CONSOLE_TOKEN_SIGNIN", "true", "CONSOLE_SESSION_KEY", "short"), "CONSOLE_SESSION_KEY"},
	} {
		s, err := load(config.FromMap(tc.env))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no error", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
		if tc.name == "provider alone" && s.oidc == nil {
			t.Errorf("%s: no provider", tc.name)
		}
	}
}
