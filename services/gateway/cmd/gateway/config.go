package main

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/services/gateway/internal/auth"
	"github.com/doclib/services/gateway/internal/bodyread"
	"github.com/doclib/services/gateway/internal/changes"
	"github.com/doclib/services/gateway/internal/crossorigin"
	"github.com/doclib/services/gateway/internal/route"
)

// Config is every setting of the gateway, read once from the environment.
type Config struct {
	Server httpx.ServerConfig
	// PublicAddr serves /public/**; AdminAddr serves /bo/** and everything
	// public.
	PublicAddr, AdminAddr string
	LogLevel              string
	Upstreams             map[route.Upstream]*url.URL
	// ConsoleURL is the console service, served at /console/ on the admin
	// listener only; nil leaves the console out.
	ConsoleURL *url.URL

	// BOTokens are the static API tokens of the back-office (secret).
	BOTokens      []auth.StaticToken
	OIDCIssuer    string
	OIDCAudience  string
	OIDCRoleClaim string
	AuthFailures  int64 // failed /bo authentications per minute per client; 0 disables the limit
	IdentityKey   []byte

	MaxUploadSize   int64
	PublicRateLimit int64 // requests per second per client IP; 0 disables
	// PublicCacheTTL is how long the gateway answers a public JSON read
	// from memory before it revalidates with its service; 0 disables.
	PublicCacheTTL  time.Duration
	UpstreamTimeout time.Duration
	// BodyRead bounds how long a request body may take to arrive.
	BodyRead       bodyread.Config
	TrustedProxies []string
	// CORSOrigins may call the admin listener from a browser.
	CORSOrigins []string
	// NATSURL is where the live streams of changes read the LIBRARY
	// stream; Changes bounds them.
	NATSURL string
	Changes changes.Config
}

// loadConfig reads the gateway's settings; env.Err reports every invalid one.
func loadConfig(env *config.Env) Config {
	c := Config{
		// Uploads and downloads of up to 100 MiB stream through the gateway,
		// so whole-request and whole-response timeouts are long; headers
		// (10s, set by httpx) and idle connections stay short.
		Server: httpx.LoadServerConfig(env, httpx.ServerConfig{
			ReadTimeout: 30 * time.Minute, WriteTimeout: 30 * time.Minute,
			IdleTimeout: 60 * time.Second, DrainDelay: 5 * time.Second,
		}),
		PublicAddr: env.String("PUBLIC_ADDR", ":8080"),
		AdminAddr:  env.String("ADMIN_ADDR", ":8090"),
		LogLevel:   env.String("LOG_LEVEL", "info"),
		Upstreams: map[route.Upstream]*url.URL{
			route.Taxonomy: env.URL("TAXONOMY_URL", ""),
			route.Catalog:  env.URL("CATALOG_URL", ""),
			route.Media:    env.URL("MEDIA_URL", ""),
			route.Webhook:  env.URL("WEBHOOK_URL", ""),
		},
		ConsoleURL:      env.OptionalURL("CONSOLE_URL"),
		OIDCIssuer:      env.String("OIDC_ISSUER_URL", ""),
		OIDCAudience:    env.String("OIDC_AUDIENCE", ""),
		OIDCRoleClaim:   env.String("OIDC_ROLE_CLAIM", "roles"),
		AuthFailures:    env.Int("BO_AUTH_FAILURE_LIMIT", 60, 0, 1_000_000),
		IdentityKey:     proof.LoadKey(env),
		MaxUploadSize:   env.Int("MEDIA_MAX_UPLOAD_SIZE", 100<<20, 1, 1<<40),
		PublicRateLimit: env.Int("PUBLIC_RATE_LIMIT", 100, 0, 1_000_000),
		PublicCacheTTL:  env.Duration("PUBLIC_CACHE_TTL", 100*time.Millisecond),
		UpstreamTimeout: env.Duration("UPSTREAM_TIMEOUT", 30*time.Second),
		TrustedProxies:  env.List("TRUSTED_PROXIES", nil),
		CORSOrigins:     env.List("CORS_ALLOWED_ORIGINS", nil),
	}
	c.NATSURL = env.Required("NATS_URL")
	c.Changes = loadChanges(env)
	c.BodyRead = bodyread.Config{
		Timeout:       env.Duration("BODY_READ_TIMEOUT", 10*time.Second),
		UploadMinRate: env.Int("UPLOAD_MIN_RATE", 16<<10, 1, 1<<40),
		Max:           c.Server.ReadTimeout,
	}
	if c.BodyRead.Timeout <= 0 {
		env.Check("BODY_READ_TIMEOUT", errors.New("must be more than 0"))
	}
	if c.Server.Addr != "" {
		env.Check("HTTP_ADDR", errors.New("is not read by the gateway: set PUBLIC_ADDR and ADMIN_ADDR"))
	}
	if c.PublicAddr == c.AdminAddr {
		env.Check("ADMIN_ADDR", errors.New("must differ from PUBLIC_ADDR: /bo must not be served on the public listener"))
	}
	tokens, err := auth.ParseStaticTokens(env.OptionalSecret("BO_API_TOKENS"))
	if err != nil {
		env.Check("BO_API_TOKENS", fmt.Errorf("%w (the format is NAME:ROLE:TOKEN, comma- or line-separated; ROLE is viewer or editor)", err))
	}
	c.BOTokens = tokens
	for name, u := range c.Upstreams {
		if u != nil && u.Path != "" && u.Path != "/" {
			env.Check(strings.ToUpper(string(name))+"_URL", errors.New("must have no path: the gateway forwards the contract's paths as they are"))
		}
	}
	if u := c.ConsoleURL; u != nil && u.Path != "" && u.Path != "/" {
		env.Check("CONSOLE_URL", errors.New("must have no path: the gateway forwards /console/ as it is"))
	}
	if _, err := crossorigin.ParseOrigins(c.CORSOrigins); err != nil {
		env.Check("CORS_ALLOWED_ORIGINS", err)
	}
	if c.PublicCacheTTL > 10*time.Second {
		env.Check("PUBLIC_CACHE_TTL", errors.New("must be at most 10s: public reads would lag writes made through other gateway replicas by that much"))
	}
	if c.UpstreamTimeout == 0 {
		env.Check("UPSTREAM_TIMEOUT", errors.New("must be more than 0"))
	}
	if len(c.BOTokens) == 0 && c.OIDCIssuer == "" && err == nil {
		env.Check("BO_API_TOKENS", errors.New("is required unless OIDC_ISSUER_URL is set: /bo must have a way to authenticate"))
	}
	if c.OIDCIssuer != "" {
		if u, err := url.Parse(c.OIDCIssuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			env.Check("OIDC_ISSUER_URL", errors.New("is not an absolute http(s) URL"))
		}
		if strings.Trim(c.OIDCRoleClaim, ".") != c.OIDCRoleClaim || strings.Contains(c.OIDCRoleClaim, "..") {
			env.Check("OIDC_ROLE_CLAIM", errors.New("must be a claim name, or a dotted path such as realm_access.roles"))
		}
		if c.OIDCAudience == "" {
			env.Check("OIDC_AUDIENCE", errors.New("is required when OIDC_ISSUER_URL is set"))
		}
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				env.Check("TRUSTED_PROXIES", errors.New(strings.TrimSpace(p)+" is neither an IP nor a CIDR"))
			}
		}
	}
	return c
}

// loadChanges reads the bounds of the live streams of changes.
func loadChanges(env *config.Env) changes.Config {
	c := changes.Config{
		Heartbeat:    env.Duration("CHANGES_HEARTBEAT", 15*time.Second),
		MaxStreams:   int(env.Int("CHANGES_MAX_STREAMS", 10_000, 1, 1_000_000)),
		MaxPerClient: int(env.Int("CHANGES_MAX_STREAMS_PER_CLIENT", 20, 0, 1_000_000)),
		WriteTimeout: env.Duration("CHANGES_WRITE_TIMEOUT", 30*time.Second),
	}
	if c.Heartbeat < time.Second || c.Heartbeat > 5*time.Minute {
		env.Check("CHANGES_HEARTBEAT", errors.New("must be between 1s and 5m: proxies and mobile networks close a connection idle for a minute or two"))
	}
	if c.WriteTimeout < time.Second {
		env.Check("CHANGES_WRITE_TIMEOUT", errors.New("must be at least 1s"))
	}
	return c
}
