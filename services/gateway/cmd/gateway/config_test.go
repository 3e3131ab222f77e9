package main

import (
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/services/gateway/internal/route"
)

func TestLoadConfig(t *testing.T) {
	t.Parallel()
	base := func() map[string]string {
		return map[string]string{
			"TAXONOMY_URL": "http://taxonomy:8080", "CATALOG_URL": "http://catalog:8080",
			"MEDIA_URL": "http://media:8080", "WEBHOOK_URL": "http://webhook:8080", "BO_API_TOKENS": "alice:editor:tok-a-0123,ci:viewer:tok-b-0123",
			"IDENTITY_SIGNING_KEY": "k-0123456789abcdef0123456789abcdef", "NATS_URL": "nats://nats:4222",
		}
	}
	tests := []struct {
		name    string
		edit    func(m map[string]string)
		wantErr []string // substrings of the error; none means valid
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", edit: func(map[string]string) {}, check: func(t *testing.T, c Config) {
			if c.PublicAddr != ":8080" || c.AdminAddr != ":8090" || c.Server.ReadTimeout != 30*time.Minute || c.Server.WriteTimeout != 30*time.Minute {
				t.Errorf("addresses %s %s, server config = %+v; want :8080, :8090 with 30m read/write timeouts", c.PublicAddr, c.AdminAddr, c.Server)
			}
			if c.MaxUploadSize != 104857600 || c.PublicRateLimit != 100 || c.UpstreamTimeout != 30*time.Second {
				t.Errorf("limits = %d, %d, %v; want 104857600, 100, 30s", c.MaxUploadSize, c.PublicRateLimit, c.UpstreamTimeout)
			}
			if c.PublicCacheTTL != 100*time.Millisecond {
				t.Errorf("PublicCacheTTL = %v, want 100ms", c.PublicCacheTTL)
			}
			if c.OIDCRoleClaim != "roles" || c.AuthFailures != 60 {
				t.Errorf("OIDC role claim %q, failure limit %d; want roles, 60", c.OIDCRoleClaim, c.AuthFailures)
			}
			if len(c.BOTokens) != 2 || c.BOTokens[1].Name != "ci" || c.BOTokens[1].Role != "viewer" || c.Upstreams[route.Media].Host != "media:8080" {
				t.Errorf("tokens %d, media %v; want 2 tokens and media:8080", len(c.BOTokens), c.Upstreams[route.Media])
			}
		}},
		{name: "live stream bounds", edit: func(m map[string]string) {
			m["CHANGES_HEARTBEAT"] = "500ms"
			m["CHANGES_MAX_STREAMS"] = "0"
			m["CHANGES_WRITE_TIMEOUT"] = "0s"
		}, wantErr: []string{"CHANGES_HEARTBEAT: must be between 1s and 5m", "CHANGES_MAX_STREAMS", "CHANGES_WRITE_TIMEOUT: must be at least 1s"}},
		{name: "NATS missing", edit: func(m map[string]string) { delete(m, "NATS_URL") }, wantErr: []string{"NATS_URL: is required"}},
		{name: "no way to authenticate", edit: func(m map[string]string) { delete(m, "BO_API_TOKENS") },
			wantErr: []string{"BO_API_TOKENS"}},
		{name: "OIDC instead of tokens", edit: func(m map[string]string) {
			delete(m, "BO_API_TOKENS")
			m["OIDC_ISSUER_URL"] = "https://id.example.com"
			m["OIDC_AUDIENCE"] = "doclib"
		}},
		{name: "tokens in the old format", edit: func(m map[string]string) { m["BO_API_TOKENS"] = "tok-a-0123" },
			wantErr: []string{"BO_API_TOKENS: entry 1 is not NAME:ROLE:TOKEN"}},
		{name: "identity key missing", edit: func(m map[string]string) { delete(m, "IDENTITY_SIGNING_KEY") },
			wantErr: []string{"IDENTITY_SIGNING_KEY: is required"}},
		{name: "identity key too short", edit: func(m map[string]string) { m["IDENTITY_SIGNING_KEY"] = "short" },
			wantErr: []string{"IDENTITY_SIGNING_KEY: must be at least 32 bytes"}},
		{name: "one address for both listeners", edit: func(m map[string]string) { m["PUBLIC_ADDR"] = ":9000"; m["ADMIN_ADDR"] = ":9000" },
			wantErr: []string{"ADMIN_ADDR"}},
		{name: "HTTP_ADDR is not the gateway's", edit: func(m map[string]string) { m["HTTP_ADDR"] = ":8080" },
			wantErr: []string{"HTTP_ADDR: is not read by the gateway"}},
		{name: "upstream with a path", edit: func(m map[string]string) { m["CATALOG_URL"] = "http://catalog:8080/api" },
			wantErr: []string{"CATALOG_URL: must have no path"}},
		{name: "CORS origins", edit: func(m map[string]string) { m["CORS_ALLOWED_ORIGINS"] = "http://localhost:5173, https://bo.example.org" },
			check: func(t *testing.T, c Config) {
				if len(c.CORSOrigins) != 2 || c.CORSOrigins[1] != "https://bo.example.org" {
					t.Errorf("CORSOrigins = %q", c.CORSOrigins)
				}
			}},
		{name: "bad CORS origins", edit: func(m map[string]string) {
			m["CORS_ALLOWED_ORIGINS"] = "*,https://bo.example.org/,bo.example.org,https://BO.example.org,https://x.org/app"
		}, wantErr: []string{"* is not allowed", "no trailing slash", `"bo.example.org" is not an origin`, "lower case", `"https://x.org/app" is not an origin`}},
		{name: "role claim path", edit: func(m map[string]string) {
			m["OIDC_ISSUER_URL"] = "https://id.example.com"
			m["OIDC_AUDIENCE"] = "doclib"
			m["OIDC_ROLE_CLAIM"] = "realm_access..roles"
		}, wantErr: []string{"OIDC_ROLE_CLAIM"}},
		{name: "OIDC without audience", edit: func(m map[string]string) { m["OIDC_ISSUER_URL"] = "https://id.example.com" },
			wantErr: []string{"OIDC_AUDIENCE"}},
		{name: "every bad value named", edit: func(m map[string]string) {
			delete(m, "CATALOG_URL")
			m["MEDIA_URL"] = "media:8080"
			m["PUBLIC_RATE_LIMIT"] = "-1"
			m["UPSTREAM_TIMEOUT"] = "0s"
			m["TRUSTED_PROXIES"] = "10.0.0.0/8,nope"
			m["PUBLIC_CACHE_TTL"] = "1m"
		}, wantErr: []string{"CATALOG_URL", "MEDIA_URL", "PUBLIC_RATE_LIMIT", "UPSTREAM_TIMEOUT", "TRUSTED_PROXIES", "PUBLIC_CACHE_TTL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := base()
			tt.edit(m)
			env := config.FromMap(m)
			c := loadConfig(env)
			err := env.Err()
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v does not name %s", err, w)
				}
			}
			for _, a := range env.Attrs() {
				if s, ok := a.(interface{ String() string }); ok && (strings.Contains(s.String(), "tok-a") || strings.Contains(s.String(), "k-0123")) {
					t.Errorf("a token is shown in the logged configuration: %s", s)
				}
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}
