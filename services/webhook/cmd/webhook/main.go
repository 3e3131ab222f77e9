// Command webhook sends the library's events to outside systems: it keeps
// the webhook subscriptions (/bo/webhooks), consumes every event type of
// the LIBRARY stream into one persisted queue per subscription, and sends
// each queue in order, signed per Standard Webhooks, with retries.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/metrics"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/shutdown"
	"github.com/doclib/libs/startup"
	"github.com/doclib/libs/startup/database"
	"github.com/doclib/services/webhook/internal/delivery"
	deliverystore "github.com/doclib/services/webhook/internal/delivery/mongostore"
	"github.com/doclib/services/webhook/internal/destination"
	"github.com/doclib/services/webhook/internal/eventtype"
	"github.com/doclib/services/webhook/internal/httpapi"
	"github.com/doclib/services/webhook/internal/keyring"
	"github.com/doclib/services/webhook/internal/subscription"
	"github.com/doclib/services/webhook/internal/subscription/mongostore"
)

const service = "webhook"

// consumerName is the one durable consumer of every webhook event type:
// one consumer, not one per type, so events reach the queues in the
// stream's order.
const consumerName = "webhook-events"

func main() { startup.Main(service, run) }

type settings struct {
	server      httpx.ServerConfig
	logLevel    string
	mongoURI    string
	database    string
	natsURL     string
	identityKey []byte
	secretKeys  *keyring.Keyring
	allowHTTP   bool
	allowed     []netip.Prefix
	retry       delivery.Retry
	grace       time.Duration // a rotated secret still signs this long
	retention   time.Duration // finished deliveries stay in the log this long
	poll        time.Duration

	idempotencyRetention time.Duration
	idempotencyDatabase  string
}

func load(env *config.Env) (settings, error) {
	s := settings{
		server: httpx.LoadServerConfig(env, httpx.ServerConfig{
			Addr: ":8084", ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		}),
		logLevel:    env.String("LOG_LEVEL", "info"),
		mongoURI:    env.Required("MONGODB_URI"),
		database:    env.String("MONGODB_DATABASE", "webhook"),
		natsURL:     env.Required("NATS_URL"),
		identityKey: proof.LoadKey(env),
		allowHTTP:   env.Bool("WEBHOOK_ALLOW_HTTP", false),
		retry: delivery.Retry{
			Initial: env.Duration("WEBHOOK_RETRY_INITIAL", 5*time.Second),
			Max:     env.Duration("WEBHOOK_RETRY_MAX", 15*time.Minute),
			Window:  env.Duration("WEBHOOK_RETRY_WINDOW", 24*time.Hour),
		},
		grace:     env.Duration("WEBHOOK_SECRET_GRACE", 24*time.Hour),
		retention: env.Duration("WEBHOOK_LOG_RETENTION", 7*24*time.Hour),
		poll:      env.Duration("WEBHOOK_POLL_INTERVAL", time.Second),

		idempotencyRetention: idempotency.LoadRetention(env),
		idempotencyDatabase:  idempotency.LoadDatabase(env),
	}
	s.secretKeys = loadSecretKeys(env)
	allowed, err := destination.ParseNetworks(env.List("WEBHOOK_ALLOWED_NETWORKS", nil))
	env.Check("WEBHOOK_ALLOWED_NETWORKS", err)
	s.allowed = allowed
	for k, d := range map[string]time.Duration{"WEBHOOK_RETRY_INITIAL": s.retry.Initial, "WEBHOOK_RETRY_MAX": s.retry.Max,
		"WEBHOOK_RETRY_WINDOW": s.retry.Window, "WEBHOOK_LOG_RETENTION": s.retention, "WEBHOOK_POLL_INTERVAL": s.poll} {
		if d <= 0 {
			env.Check(k, errors.New("must be positive"))
		}
	}
	return s, env.Err()
}

// loadSecretKeys reads the keys that seal the signing secrets at rest:
// WEBHOOK_SECRET_KEY seals and opens; the comma-separated
// WEBHOOK_SECRET_DECRYPTION_KEYS only open (a key being rotated out, or in
// before every replica has it). Without WEBHOOK_SECRET_KEY the keyring is
// nil and secrets are stored in plain text (run warns): the chart and
// make dev always set one.
func loadSecretKeys(env *config.Env) *keyring.Keyring {
	current := env.OptionalSecret("WEBHOOK_SECRET_KEY")
	others := strings.FieldsFunc(env.OptionalSecret("WEBHOOK_SECRET_DECRYPTION_KEYS"), func(r rune) bool {
		return r == ',' || unicode.IsSpace(r)
	})
	if current == "" {
		if len(others) > 0 {
			env.Check("WEBHOOK_SECRET_DECRYPTION_KEYS", errors.New("is set without WEBHOOK_SECRET_KEY"))
		}
		return nil
	}
	if _, err := keyring.New(current); err != nil {
		env.Check("WEBHOOK_SECRET_KEY", err)
		return nil
	}
	keys, err := keyring.New(current, others...)
	env.Check("WEBHOOK_SECRET_DECRYPTION_KEYS", err)
	return keys
}

// run wires the service top to bottom: logger, telemetry, MongoDB and its
// indexes, NATS (in the background), the dispatcher, the consumer (once
// NATS is up) and the HTTP server. At shutdown the server
// finishes its requests, the consumer drains, the workers finish their
// attempts, NATS drains, MongoDB disconnects, telemetry flushes.
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

	dStore := deliverystore.New(db.Database(cfg.database), cfg.retention)
	// A subscription's deletion drops its deliveries in the same transaction.
	subStore := mongostore.New(db.Database(cfg.database), cfg.secretKeys, dStore.Drop)
	// A create's answer (its secret) is kept sealed with the secrets' keys.
	keys := idempotency.NewKeys(db, cfg.idempotencyDatabase,
		httpapi.KeysConfig(cfg.idempotencyRetention, cfg.secretKeys, log))
	if err := database.EnsureIndexes(ctx, dStore, keys); err != nil {
		return err
	}
	sealed, err := subStore.SealSecrets(ctx)
	if err != nil {
		return err
	}
	if cfg.secretKeys == nil {
		log.Warn("WEBHOOK_SECRET_KEY is unset: webhook signing secrets are stored in plain text")
	} else {
		log.Info("webhook signing secrets sealed", "key", cfg.secretKeys.CurrentID(), "resealed", sealed)
	}

	bus, err := events.Open(ctx, cfg.natsURL, service, log)
	if err != nil {
		return err
	}
	defer bus.Close()

	guard := destination.NewGuard(cfg.allowed)
	subs := subscription.NewService(subStore, subscription.Rules{AllowHTTP: cfg.allowHTTP, Guard: guard}, cfg.grace, log)
	host, _ := os.Hostname()
	dispatcher := delivery.NewDispatcher(dStore, subs, delivery.NewSender(guard), delivery.Config{
		Retry: cfg.retry, Owner: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), events.NewID()[:8]),
		Poll: cfg.poll, Lease: 25 * time.Second,
	}, log)
	dctx, stopDispatcher := context.WithCancel(context.WithoutCancel(ctx))
	dispatched := make(chan struct{})
	go func() { defer close(dispatched); dispatcher.Run(dctx) }()
	defer func() { stopDispatcher(); <-dispatched }()

	queue := delivery.NewQueue(dStore, subs, dispatcher.Nudge)
	stopConsumer := bus.WhenReady("consumer", func(ctx context.Context) (func(context.Context) error, error) {
		return startConsumer(ctx, bus.JS, queue, log)
	})

	health := httpx.NewHealth(map[string]httpx.Check{"mongodb": mongox.Ping(db)}).
		Report(map[string]httpx.Check{"nats": bus.Ready})
	engine := httpx.NewEngine(service, log)
	engine.Use(proof.Middleware(proof.NewVerifier(cfg.identityKey)))
	// A POST with an Idempotency-Key runs once: its answer commits with
	// its change, in the keys' database every service shares.
	engine.Use(keys.Middleware())
	health.Register(engine)
	metrics.Register(engine)
	httpapi.New(subs, dStore, dispatcher, dispatcher.Nudge).Register(engine)

	err = httpx.Serve(ctx, log, cfg.server, engine, health)
	shutdown.Do(log, "consumer", stopConsumer)
	return err
}

// startConsumer consumes every webhook event type into the queues. A
// database outage is Transient: the event waits, it is never dead-lettered
// for it.
func startConsumer(ctx context.Context, js jetstream.JetStream, q *delivery.Queue, log *slog.Logger) (func(context.Context) error, error) {
	transient := func(err error) error {
		if err != nil && mongox.IsUnavailable(err) {
			return events.Transient(err)
		}
		return err
	}
	// Batches: a burst of events costs one insert, not one per event.
	c, err := events.StartConsumer(ctx, js, events.ConsumerConfig{Name: consumerName, Subjects: eventtype.Subjects(),
		Batch: func(ctx context.Context, es []events.Envelope) error { return transient(q.HandleBatch(ctx, es)) }},
		func(ctx context.Context, e events.Envelope) error { return transient(q.Handle(ctx, e)) }, log)
	if err != nil {
		return nil, err
	}
	return c.Stop, nil
}
