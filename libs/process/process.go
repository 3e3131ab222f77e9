// Package process holds what each data service of the library opens when it
// starts, in the same order for all of them: its logger, telemetry, the
// MongoDB client and the NATS connection (with the LIBRARY stream ensured).
// Close releases them in the reverse order when the service exits.
package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/logging"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/shutdown"
	"github.com/doclib/libs/telemetry"
)

// Process is one running service's shared connections.
type Process struct {
	Name  string
	Log   *slog.Logger
	Mongo *mongo.Client
	NATS  *nats.Conn // nil until OpenNATS
	JS    jetstream.JetStream

	closers []func()
}

// Start makes the logger (JSON on stderr, at logLevel), logs env's
// settings, sets telemetry up and creates the MongoDB client. The client
// connects lazily: the first store operation (ensuring indexes) is what
// finds MongoDB unreachable.
func Start(ctx context.Context, name string, env *config.Env, logLevel, mongoURI string) (*Process, error) {
	p := &Process{Name: name, Log: logging.New(os.Stderr, name, logLevel)}
	p.Log.Info("starting", env.Attrs()...)

	shutdownTelemetry, err := telemetry.Setup(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	p.onClose(func() { shutdown.Do(p.Log, "telemetry", shutdownTelemetry) })

	client, err := mongox.Connect(mongoURI)
	if err != nil {
		p.Close()
		return nil, err
	}
	p.Mongo = client
	p.onClose(func() { shutdown.Do(p.Log, "mongodb", client.Disconnect) })
	return p, nil
}

// IndexError words a failure to ensure a store's indexes, the first
// operation that reaches MongoDB.
func IndexError(err error) error {
	return fmt.Errorf("mongodb indexes (is MONGODB_URI reachable?): %w", err)
}

// OpenNATS connects to NATS at url and ensures the library's streams.
func (p *Process) OpenNATS(ctx context.Context, url string) error {
	nc, js, err := events.Open(ctx, url, p.Name, p.Log)
	if err != nil {
		return err
	}
	p.NATS, p.JS = nc, js
	p.onClose(func() { _ = nc.Drain() })
	return nil
}

// Health returns the readiness checks of MongoDB and, once opened, NATS,
// plus extra ones.
func (p *Process) Health(extra map[string]httpx.Check) *httpx.Health {
	checks := map[string]httpx.Check{"mongodb": mongox.Ping(p.Mongo)}
	if p.NATS != nil {
		checks["nats"] = events.Ready(p.NATS)
	}
	for k, c := range extra {
		checks[k] = c
	}
	return httpx.NewHealth(checks)
}

func (p *Process) onClose(f func()) { p.closers = append(p.closers, f) }

// Close releases what was opened, the last opened first.
func (p *Process) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}
