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
			"MEDIA_URL": "http://media:8080", "BO_API_TOKENS": "tok-a, tok-b",
		}
	}
	tests := []struct {
		name    string
		edit    func(m map[string]string)
		wantErr []string // substrings of the error; none means valid
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", edit: func(map[string]string) {}, check: func(t *testing.T, c Config) {
			if c.Server.Addr != ":8080" || c.Server.ReadTimeout != 30*time.Minute || c.Server.WriteTimeout != 30*time.Minute {
				t.Errorf("server config = %+v, want :8080 with 30m read/write timeouts", c.Server)
			}
			if c.MaxUploadSize != 104857600 || c.PublicRateLimit != 100 || c.UpstreamTimeout != 30*time.Second {
				t.Errorf("limits = %d, %d, %v; want 104857600, 100, 30s", c.MaxUploadSize, c.PublicRateLimit, c.UpstreamTimeout)
			}
			if c.PublicCacheTTL != 100*time.Millisecond {
				t.Errorf("PublicCacheTTL = %v, want 100ms", c.PublicCacheTTL)
			}
			if len(c.BOTokens) != 2 || c.Upstreams[route.Media].Host != "media:8080" {
				t.Errorf("tokens %d, media %v; want 2 tokens and media:8080", len(c.BOTokens), c.Upstreams[route.Media])
			}
		}},
		{name: "no way to authenticate", edit: func(m map[string]string) { delete(m, "BO_API_TOKENS") },
			wantErr: []string{"BO_API_TOKENS"}},
		{name: "OIDC instead of tokens", edit: func(m map[string]string) {
			delete(m, "BO_API_TOKENS")
			m["OIDC_ISSUER_URL"] = "https://id.example.com"
			m["OIDC_AUDIENCE"] = "doclib"
		}},
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
				if s, ok := a.(interface{ String() string }); ok && strings.Contains(s.String(), "tok-a") {
					t.Errorf("a token is shown in the logged configuration: %s", s)
				}
			}
			if tt.check != nil {
				tt.check(t, c)
			}
		})
	}
}
