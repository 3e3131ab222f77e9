// Command catalog serves documents: the public listing, detail and
// downloads, the back-office writes, and the internal media-usage lookup.
// It consumes the deletion events of the taxonomy and media services.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/periodic"
	"github.com/doclib/libs/shutdown"
	"github.com/doclib/libs/startup"
	"github.com/doclib/libs/startup/database"
	"github.com/doclib/services/catalog/internal/consumers"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
	"github.com/doclib/services/catalog/internal/httpapi"
	"github.com/doclib/services/catalog/internal/library"
	"github.com/doclib/services/catalog/internal/upstream"
)

const service = "catalog"

// Background work: scheduled publications are applied; revisions older
// than their retention go; the trash is purged of documents older than
// the retention; the tag categories, which order related documents, are
// revalidated (sync revalidates them itself, at most every second, while
// clients sync).
const (
	categoriesEvery = 10 * time.Second
	// The retention of revisions by age (REVISION_RETENTION) runs at most
	// once a minute (document.Service.ExpireRevisions).
	expireEvery = 10 * time.Second
	// Scheduled publications are applied within a second (every replica
	// looks; the store's transaction makes one apply each).
	scheduleEvery = 500 * time.Millisecond
)

func main() { startup.Main(service, run) }

type settings struct {
	server      httpx.ServerConfig
	logLevel    string
	mongoURI    string
	database    string
	natsURL     string
	identityKey []byte // verifies the gateway's signature of the caller on /bo
	// idempotencyRetention is how long an Idempotency-Key is kept.
	idempotencyRetention time.Duration
	// idempotencyDatabase holds the keys of every service.
	idempotencyDatabase string
	taxonomyURL         *url.URL
	mediaURL            *url.URL
	// trashRetention: documents deleted longer ago are purged; 0 keeps
	// them forever.
	trashRetention time.Duration
	relay          outbox.RelayConfig
	// revisionRetention bounds the revisions kept (REVISION_RETENTION: a
	// count or an age); zero keeps all.
	revisionRetention document.Retention
}

func load(env *config.Env) (settings, error) {
	s := settings{
		server: httpx.LoadServerConfig(env, httpx.ServerConfig{
			// Downloads of PDF documents stream media bytes through here.
			Addr: ":8082", ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Minute,
		}),
		logLevel:             env.String("LOG_LEVEL", "info"),
		mongoURI:             env.Required("MONGODB_URI"),
		database:             env.String("MONGODB_DATABASE", "catalog"),
		natsURL:              env.Required("NATS_URL"),
		idempotencyRetention: idempotency.LoadRetention(env),
		idempotencyDatabase:  idempotency.LoadDatabase(env),
		identityKey:          proof.LoadKey(env),
		taxonomyURL:          env.URL("TAXONOMY_URL", ""),
		mediaURL:             env.URL("MEDIA_URL", ""),
		// CONTRACT.md §8: 30 days unless configured.
		trashRetention: env.Duration("TRASH_RETENTION", 30*24*time.Hour),
		relay:          outbox.LoadRelayConfig(env),
	}
	r, err := document.ParseRetention(env.String("REVISION_RETENTION", ""))
	if err != nil {
		return s, fmt.Errorf("REVISION_RETENTION: %w", err)
	}
	s.revisionRetention = r
	return s, env.Err()
}

// run wires the service top to bottom. It starts, in this order, the
// logger, telemetry, the MongoDB client (the store's indexes are the first
// call to reach it), NATS (connecting in the background), the outbox
// relay, the domain service and the in-memory library, the consumers (once
// NATS is up), the background jobs and the HTTP server; each defer stops
// what was started just above it, so at shutdown the server lets in-flight
// requests finish, then the consumers stop, the jobs stop, the relay makes
// a last pass, NATS drains, MongoDB disconnects, telemetry flushes.
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

	store := mongostore.New(db.Database(cfg.database), log)
	if err := database.EnsureIndexes(ctx, store); err != nil {
		return err
	}

	bus, err := events.Open(ctx, cfg.natsURL, service, log)
	if err != nil {
		return err
	}
	defer bus.Close()

	// Events leave as soon as the transaction that recorded them commits.
	stopRelay := store.Outbox().Start(events.NewPublisher(bus.JS, log), cfg.relay)
	defer stopRelay()

	refs := upstream.New(cfg.taxonomyURL, cfg.mediaURL)
	svc := document.NewService(store, refs, log)
	svc.SetRetention(cfg.revisionRetention)
	store.KeepRevisions(cfg.revisionRetention.Count)
	lib := startLibrary(ctx, log, store, refs)
	defer lib.Close()

	// Documents are served while NATS is down; the consumers start once it
	// is up (their durable positions wait in the stream meanwhile). They
	// are stopped once the server is done (below), before the relay.
	stopConsumers := bus.WhenReady("consumers", func(ctx context.Context) (func(context.Context) error, error) {
		return consumers.Start(ctx, bus.JS, svc, lib.Put, log)
	})

	stopJobs := startJobs(ctx, log, cfg, svc, lib, store)
	defer stopJobs()

	engine, health, err := newEngine(ctx, log, cfg, db, bus, svc, lib)
	if err != nil {
		return err
	}
	err = httpx.Serve(ctx, log, cfg.server, bound(engine), health)
	// In-flight requests are done: stop taking events.
	shutdown.Do(log, "consumers", stopConsumers)
	return err
}

// startLibrary puts every document in memory, to answer the reads: filled
// now, in the background, and kept in step with the store's change
// sequence. The store's events render public details with it.
func startLibrary(ctx context.Context, log *slog.Logger, store *mongostore.Store, refs *upstream.Client) *library.Library {
	lib := library.New(store, refs, log)
	store.RenderPublic(httpapi.PublicDetail(lib)) // before any write
	go func() {
		if _, err := lib.Get(ctx, 0); err != nil {
			log.WarnContext(ctx, "documents not loaded into memory yet; the first read loads them", "error", err)
		}
	}()
	return lib
}

// newEngine builds the HTTP side: readiness (MongoDB; NATS reported,
// never required), the gateway's proof on /bo, the Idempotency-Key
// middleware (a POST's answer commits with its change), the routes.
func newEngine(ctx context.Context, log *slog.Logger, cfg settings, db *mongo.Client, bus *events.Bus, svc *document.Service, lib *library.Library) (*gin.Engine, *httpx.Health, error) {
	health := httpx.NewHealth(map[string]httpx.Check{"mongodb": mongox.Ping(db)}).
		Report(map[string]httpx.Check{"nats": bus.Ready})
	engine := httpx.NewEngine(service, log)
	// Before every route: /bo answers only requests the gateway signed.
	engine.Use(proof.Middleware(proof.NewVerifier(cfg.identityKey), httpapi.Safe))
	// A POST with an Idempotency-Key runs once: its answer commits with
	// its change.
	keys := idempotency.NewKeys(db, cfg.idempotencyDatabase, idempotency.KeysConfig{
		Retention: cfg.idempotencyRetention, Log: log, Recheck: httpapi.CreatedDeleted(svc.Get)})
	if err := keys.EnsureIndexes(ctx); err != nil {
		return nil, nil, mongox.IndexError(err)
	}
	engine.Use(httpx.Unless(httpapi.Safe, keys.Middleware()))
	health.Register(engine)
	metrics.Register(engine) // on its own port, which no ingress routes to
	httpapi.New(svc, lib, httpapi.Options{MediaURL: cfg.mediaURL}).Register(engine)

	return engine, health, nil
}

// startJobs starts the background work of a replica (see the constants
// above) and returns what stops it, the last started first.
func startJobs(ctx context.Context, log *slog.Logger, cfg settings, svc *document.Service, lib *library.Library, store *mongostore.Store) (stop func()) {
	stopCategories := periodic.Start(ctx, log, "revalidating tag categories", categoriesEvery, lib.RefreshCategories)
	stops := []func(){stopCategories}
	if cfg.revisionRetention.Age > 0 {
		stopExpiring := periodic.Start(ctx, log, "removing revisions older than the retention", expireEvery, func(ctx context.Context) error {
			_, err := svc.ExpireRevisions(ctx)
			return err
		})
		stops = append(stops, stopExpiring)
	}
	// Also catches up at start-up what fell due while every replica was down.
	stopSchedule := periodic.Start(ctx, log, "applying scheduled publications", scheduleEvery, func(ctx context.Context) error {
		changed, err := svc.RunSchedule(ctx, time.Now(), 100)
		lib.Put(changed...)
		return err
	})
	stops = append(stops, stopSchedule)
	if cfg.trashRetention > 0 {
		// Every minute, or more often for a shorter retention (tests).
		purgeEvery := min(time.Minute, cfg.trashRetention)
		stopPurging := periodic.Start(ctx, log, "purging the trash", purgeEvery, func(ctx context.Context) error {
			n, err := svc.PurgeTrash(ctx, time.Now().Add(-cfg.trashRetention), 100)
			if n > 0 {
				log.InfoContext(ctx, "documents deleted longer ago than the trash retention were purged", "documents", n)
			}
			if err != nil {
				return err
			}
			// The tombstones go at once: the horizon moves with them.
			_, err = store.Sweep(ctx)
			return err
		})
		stops = append(stops, stopPurging)
	}
	return func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
}

// bound answers a write that has not answered within the request budget
// as an unknown outcome (httpx.Bound).
func bound(h http.Handler) http.Handler {
	return httpx.Bound(h, httpx.RequestBudget+httpx.BoundGrace, httpapi.Safe)
}
