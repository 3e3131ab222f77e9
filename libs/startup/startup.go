// Package startup holds what every service's main does the same way: the
// signals that stop it, its logger and telemetry, and its MongoDB client.
// What a service wires after that is its own, in its cmd/<service>/main.go.
package startup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/logging"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/shutdown"
	"github.com/doclib/libs/telemetry"
)

// Main runs run with a context that SIGINT and SIGTERM cancel (the start of
// a graceful shutdown); an error it returns is printed and exits 1.
func Main(service string, run func(context.Context) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, service+":", err)
		os.Exit(1)
	}
}

// Process is a started service: its logger and, when it has a database,
// its MongoDB client.
type Process struct {
	Log *slog.Logger
	DB  *mongo.Client // nil for a service without a database
	// stops undo what Begin started, last first.
	stops []func()
}

// Begin starts the logger at level, logs the configuration env read (its
// secrets masked), sets up telemetry and, unless mongoURI is empty, opens
// the MongoDB client and checks that the server runs transactions (every
// write is one; a standalone MongoDB fails here, clearly). Call it once the
// configuration is valid, so a wrong variable is reported before anything
// starts, and defer Stop.
func Begin(ctx context.Context, service string, env *config.Env, level, mongoURI string) (*Process, error) {
	p := &Process{Log: logging.New(os.Stderr, service, level)}
	p.Log.Info("starting", env.Attrs()...)
	stopTelemetry, err := telemetry.Setup(ctx, service)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	p.stops = append(p.stops, func() { shutdown.Do(p.Log, "telemetry", stopTelemetry) })
	if mongoURI == "" {
		return p, nil
	}
	p.DB, err = mongox.Connect(mongoURI)
	if err != nil {
		p.Stop()
		return nil, err
	}
	p.stops = append(p.stops, func() { shutdown.Do(p.Log, "mongodb", p.DB.Disconnect) })
	if err := mongox.CheckTransactions(ctx, p.DB); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Stop disconnects MongoDB, then flushes telemetry.
func (p *Process) Stop() {
	for i := len(p.stops) - 1; i >= 0; i-- {
		p.stops[i]()
	}
}

// Indexed is a store that creates its indexes at start-up.
type Indexed interface {
	EnsureIndexes(ctx context.Context) error
}

// EnsureIndexes creates the indexes of every store, in order, wording a
// failure as the database being out of reach (it is the first call).
func EnsureIndexes(ctx context.Context, stores ...Indexed) error {
	for _, s := range stores {
		if err := s.EnsureIndexes(ctx); err != nil {
			return mongox.IndexError(err)
		}
	}
	return nil
}
