// Command gateway is the document library's edge: it serves /public/** on
// its public listener and /bo/** (plus everything public) on its admin
// listener, by forwarding each route of the contract to the service that
// owns it. It is the one place that authenticates /bo, and signs who is
// calling for the services.
package main

import (
	"context"
	"net/http"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/periodic"
	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/libs/startup"
	"github.com/doclib/services/gateway/internal/auth"
	"github.com/doclib/services/gateway/internal/changes"
	"github.com/doclib/services/gateway/internal/httpapi"
	"github.com/doclib/services/gateway/internal/microcache"
	"github.com/doclib/services/gateway/internal/proxy"
	"github.com/doclib/services/gateway/internal/reference"
	"github.com/doclib/services/gateway/internal/route"
)

const service = "gateway"

func main() { startup.Main(service, run) }

// The micro-cache's memory: the largest answer it keeps (a listing of
// 10,000 documents is about 1.6 MiB), what the answers kept by path may
// use together (each counted twice, for its compressed forms): room for
// the listing and the details of 10,000 documents of a few KiB, and what
// sync pages may use (kept by cursor, apart, as anyone can make up
// cursors): room for the pages of a first sync of 10,000 documents (about
// 250 KiB each) and thousands of empty ones.
var cacheLimits = microcache.Limits{MaxBody: 32 << 20, MaxTotal: 256 << 20, MaxQueryTotal: 64 << 20}

// run wires the gateway top to bottom. It starts, in this order, the
// logger, telemetry, the authentication (the OIDC issuer discovered in the
// background), the proxies and the micro-cache, and the two listeners;
// each defer stops what was started just above it, so at shutdown the
// listeners let in-flight requests finish, the discovery's retries stop,
// telemetry flushes.
func run(ctx context.Context) error {
	env := config.FromEnviron()
	cfg := loadConfig(env)
	if err := env.Err(); err != nil {
		return err
	}
	proc, err := startup.Begin(ctx, service, env, cfg.LogLevel)
	if err != nil {
		return err
	}
	defer proc.Stop()
	log := proc.Log

	var verifiers []auth.Verifier
	if len(cfg.BOTokens) > 0 {
		verifiers = append(verifiers, auth.NewStatic(cfg.BOTokens))
	}
	if cfg.OIDCIssuer != "" {
		o := auth.NewOIDC(cfg.OIDCIssuer, cfg.OIDCAudience, cfg.OIDCRoleClaim)
		// Discovered in the background, retried until it succeeds: an
		// identity provider that is down must not keep the gateway, its
		// public routes and its static tokens, from starting (JWTs are
		// 503 meanwhile).
		_, stopDiscovery := periodic.Until(ctx, log, "OIDC issuer discovery", o.Discover)
		defer stopDiscovery()
		verifiers = append(verifiers, o)
	}
	var failures *ratelimit.Limiter
	if cfg.AuthFailures > 0 {
		perMinute := float64(cfg.AuthFailures)
		failures = ratelimit.New(perMinute/60, int(cfg.AuthFailures), ratelimit.DefaultMaxClients)
	}
	authenticator, err := auth.New(failures, verifiers...)
	if err != nil {
		return err
	}

	transport := proxy.NewTransport(cfg.UpstreamTimeout)
	upstreams := map[route.Upstream]http.Handler{}
	origins := map[route.Upstream]microcache.Origin{}
	for name, u := range cfg.Upstreams {
		upstreams[name] = proxy.New(string(name), u, transport, log)
		origins[name] = microcache.Origin{Target: u, Transport: transport, Fail: proxy.ErrorHandler(string(name), log)}
	}
	var console http.Handler
	if cfg.ConsoleURL != nil {
		console = proxy.New("console", cfg.ConsoleURL, transport, log)
	}
	var cache *microcache.Cache
	if cfg.PublicCacheTTL > 0 {
		cache = microcache.New(cfg.PublicCacheTTL, cacheLimits)
	}
	// The live streams of changes follow the LIBRARY stream; NATS is
	// connected in the background, so the gateway starts while it is down
	// (the streams answer 503 meanwhile). Streams end when ctx does, and
	// each removes its consumer before the connection drains.
	bus, err := events.Open(ctx, cfg.NATSURL, service, log)
	if err != nil {
		return err
	}
	defer bus.Close()
	streams := changes.New(ctx, bus.JS, cfg.Changes, log)
	defer streams.Wait()
	clientIP := func(r *http.Request) string { return r.Header.Get(httpx.ClientIPHeader) }

	// Ready means this process can serve: it depends on no upstream, so an
	// outage of one service never takes the whole edge out of its Service
	// (its routes answer 502/503/504 meanwhile); NATS is reported, never
	// required.
	health := httpx.NewHealth(nil).Report(map[string]httpx.Check{"nats": bus.Ready})

	var limiter *ratelimit.Limiter
	if cfg.PublicRateLimit > 0 {
		rps := float64(cfg.PublicRateLimit)
		limiter = ratelimit.New(rps, int(2*cfg.PublicRateLimit), ratelimit.DefaultMaxClients)
	}

	ref, err := reference.Load()
	if err != nil {
		return err
	}
	engines, err := httpapi.New(httpapi.Deps{
		Log: log, Upstreams: upstreams, Cache: cache, Origins: origins,
		Auth: authenticator, Signer: proof.NewSigner(cfg.IdentityKey), Limiter: limiter,
		MaxUploadSize: cfg.MaxUploadSize, Health: health, TrustedProxies: cfg.TrustedProxies, CORSOrigins: cfg.CORSOrigins,
		Reference: ref, BodyRead: cfg.BodyRead, Console: console,
		PublicChanges: streams.Handler(changes.Public, clientIP), BOChanges: streams.Handler(changes.BackOffice, clientIP),
	})
	if err != nil {
		return err
	}
	// Routes for operators only go on the admin listener, never the public
	// one (CONTRACT.md §7).
	metrics.Register(engines.Admin)
	return httpx.ServeListeners(ctx, log, cfg.Server, health,
		httpx.Listener{Name: "public", Addr: cfg.PublicAddr, Handler: engines.Public},
		httpx.Listener{Name: "admin", Addr: cfg.AdminAddr, Handler: engines.Admin},
	)
}
