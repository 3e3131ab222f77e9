// Command taxonomy serves tag categories and tags (the public listing, the
// back-office writes, the internal lookup the catalog checks references
// with) and the public settings (/public/config, /bo/config).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/process"
	"github.com/doclib/services/taxonomy/internal/httpapi"
	"github.com/doclib/services/taxonomy/internal/setting"
	settingstore "github.com/doclib/services/taxonomy/internal/setting/mongostore"
	"github.com/doclib/services/taxonomy/internal/tag"
	"github.com/doclib/services/taxonomy/internal/tag/mongostore"
)

const service = "taxonomy"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, service+":", err)
		os.Exit(1)
	}
}

type settings struct {
	server      httpx.ServerConfig
	logLevel    string
	mongoURI    string
	database    string
	natsURL     string
	identityKey []byte // verifies the gateway's signature of the caller on /bo
	// moderatorEmail is the public settings' address until an editor sets one.
	moderatorEmail string
}

func load(env *config.Env) (settings, error) {
	s := settings{
		server: httpx.LoadServerConfig(env, httpx.ServerConfig{
			Addr: ":8081", ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		}),
		logLevel:       env.String("LOG_LEVEL", "info"),
		mongoURI:       env.Required("MONGODB_URI"),
		database:       env.String("MONGODB_DATABASE", "taxonomy"),
		natsURL:        env.Required("NATS_URL"),
		identityKey:    proof.LoadKey(env),
		moderatorEmail: env.Required("MODERATOR_EMAIL"),
	}
	if s.moderatorEmail != "" {
		if why := setting.CheckEmail(s.moderatorEmail); why != "" {
			env.Check("MODERATOR_EMAIL", errors.New(why))
		}
	}
	return s, env.Err()
}

// run starts, in this order: the logger, telemetry and the MongoDB client
// (process.Start, whose Close ends them last), the store's indexes, NATS
// (connecting in the background), the outbox relay and the HTTP server. It
// stops in the reverse order: the server lets in-flight requests finish,
// then the relay (a last pass), NATS, MongoDB and telemetry.
func run(ctx context.Context) error {
	env := config.FromEnviron()
	cfg, err := load(env)
	if err != nil {
		return err
	}
	p, err := process.Start(ctx, service, env, cfg.logLevel, cfg.mongoURI)
	if err != nil {
		return err
	}
	defer p.Close()
	log := p.Log
	store := mongostore.New(p.Mongo.Database(cfg.database), log)
	if err := store.EnsureIndexes(ctx); err != nil {
		return process.IndexError(err)
	}

	if err := p.OpenNATS(ctx, cfg.natsURL); err != nil {
		return err
	}
	// Deletions store their events in the deleted records; the relay
	// publishes them, then Sweep removes the finished tombstones.
	categories, tags := store.Collections()
	relay := outbox.NewRelay(events.NewPublisher(p.JS, log), log,
		outbox.RelayConfig{AfterPublish: store.Sweep}, categories, tags)
	// Stopped at return, after the HTTP server's in-flight requests (and,
	// deferred after p.Close, before NATS and MongoDB close).
	stopRelay := relay.Start()
	defer stopRelay()

	health := p.Health(nil)
	engine := httpx.NewEngine(service, log)
	// Before every route: /bo answers only requests the gateway signed.
	engine.Use(proof.Middleware(proof.NewVerifier(cfg.identityKey)))
	health.Register(engine)
	metrics.Register(engine) // on its own port, which no ingress routes to
	httpapi.New(tag.NewService(store), store, relay.Nudge).Register(engine)
	settings := settingstore.New(p.Mongo.Database(cfg.database))
	httpapi.NewSettings(setting.NewService(settings, cfg.moderatorEmail), settings).Register(engine)

	err = httpx.Serve(ctx, log, cfg.server, engine, health)
	return err
}
