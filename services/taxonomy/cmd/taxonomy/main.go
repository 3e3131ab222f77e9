// Command taxonomy serves tag categories and tags (the public listing, the
// back-office writes, the internal lookup the catalog checks references
// with) and the public settings (/public/config, /bo/config).
package main

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/startup"
	"github.com/doclib/libs/startup/database"
	"github.com/doclib/services/taxonomy/internal/httpapi"
	"github.com/doclib/services/taxonomy/internal/setting"
	settingstore "github.com/doclib/services/taxonomy/internal/setting/mongostore"
	"github.com/doclib/services/taxonomy/internal/tag"
	"github.com/doclib/services/taxonomy/internal/tag/mongostore"
)

const service = "taxonomy"

func main() { startup.Main(service, run) }

type settings struct {
	server      httpx.ServerConfig
	logLevel    string
	mongoURI    string
	database    string
	natsURL     string
	identityKey []byte // verifies the gateway's signature of the caller on /bo
	// idempotencyRetention is how long an Idempotency-Key is kept, in
	// idempotencyDatabase (shared by the services).
	idempotencyRetention time.Duration
	idempotencyDatabase  string
	// moderatorEmail is the public settings' address until an editor sets one.
	moderatorEmail string
	relay          outbox.RelayConfig
}

func load(env *config.Env) (settings, error) {
	s := settings{
		server: httpx.LoadServerConfig(env, httpx.ServerConfig{
			Addr: ":8081", ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		}),
		logLevel:             env.String("LOG_LEVEL", "info"),
		mongoURI:             env.Required("MONGODB_URI"),
		database:             env.String("MONGODB_DATABASE", "taxonomy"),
		natsURL:              env.Required("NATS_URL"),
		idempotencyRetention: idempotency.LoadRetention(env),
		idempotencyDatabase:  idempotency.LoadDatabase(env),
		identityKey:          proof.LoadKey(env),
		moderatorEmail:       env.Required("MODERATOR_EMAIL"),
		relay:                outbox.LoadRelayConfig(env),
	}
	if s.moderatorEmail != "" {
		if why := setting.CheckEmail(s.moderatorEmail); why != "" {
			env.Check("MODERATOR_EMAIL", errors.New(why))
		}
	}
	return s, env.Err()
}

// run wires the service top to bottom. It starts, in this order, the
// logger, telemetry, the MongoDB client (the store's indexes are the first
// call to reach it), NATS (connecting in the background), the outbox relay
// and the HTTP server; each defer stops what was started just above it,
// so at shutdown the server lets in-flight requests finish, the relay
// makes a last pass, NATS drains, MongoDB disconnects, telemetry flushes.
func run(ctx context.Context) error {
	env := config.FromEnviron()
	cfg, err := load(env)
	if err != nil {
		return err
	}
	proc, err := startup.Begin(ctx, service, env, cfg.logLevel)
	if err != nil {
		return err
	}
	defer proc.Stop()
	log := proc.Log
	db, err := database.Open(ctx, proc, cfg.mongoURI)
	if err != nil {
		return err
	}

	box := outbox.New(db.Database(cfg.database), log)
	store := mongostore.New(db.Database(cfg.database), box, log)
	keys := idempotency.NewKeys(db, cfg.idempotencyDatabase,
		idempotency.KeysConfig{Retention: cfg.idempotencyRetention, Log: log})
	if err := database.EnsureIndexes(ctx, box, store, keys); err != nil {
		return err
	}
	if err := store.RekeyNames(ctx, log); err != nil {
		return err
	}

	bus, err := events.Open(ctx, cfg.natsURL, service, log)
	if err != nil {
		return err
	}
	defer bus.Close()

	// Every change records its events in the outbox in its transaction;
	// the relay publishes them, woken by each commit.
	defer box.Start(events.NewPublisher(bus.JS, log), cfg.relay)()

	// Ready while MongoDB answers; NATS is reported, never required.
	health := httpx.NewHealth(map[string]httpx.Check{"mongodb": mongox.Ping(db)}).
		Report(map[string]httpx.Check{"nats": bus.Ready})
	engine := httpx.NewEngine(service, log)
	// Before every route: /bo answers only requests the gateway signed.
	engine.Use(proof.Middleware(proof.NewVerifier(cfg.identityKey)))
	// A POST with an Idempotency-Key runs once: its answer commits with
	// its change, in the keys' database every service shares.
	engine.Use(keys.Middleware())
	health.Register(engine)
	metrics.Register(engine) // on its own port, which no ingress routes to
	httpapi.New(tag.NewService(store), store).Register(engine)
	settings := settingstore.New(db.Database(cfg.database), box)
	httpapi.NewSettings(setting.NewService(settings, cfg.moderatorEmail), settings).Register(engine)

	return httpx.Serve(ctx, log, cfg.server, bound(engine), health)
}

// bound answers a write that has not answered within the request budget
// as an unknown outcome (httpx.Bound).
func bound(h http.Handler) http.Handler {
	return httpx.Bound(h, httpx.RequestBudget+httpx.BoundGrace, func(*http.Request) bool { return false })
}
