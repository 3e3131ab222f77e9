// Package startup holds what every service's main does the same way: the
// signals that stop it, its logger and telemetry, and what it stops at the
// end. It links no database driver, so a service without a database (the
// gateway, the console) carries none; the others open their MongoDB client
// with the database package beside this one.
// What a service wires after that is its own, in its cmd/<service>/main.go.
package startup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/logging"
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

// Process is a started service: its logger, and what Stop undoes.
type Process struct {
	Log *slog.Logger
	// stops undo what was started, last first.
	stops []func()
}

// Begin starts the logger at level, logs the configuration env read (its
// secrets masked) and sets up telemetry. Call it once the configuration is
// valid, so a wrong variable is reported before anything starts, and defer
// Stop.
func Begin(ctx context.Context, service string, env *config.Env, level string) (*Process, error) {
	p := &Process{Log: logging.New(os.Stderr, service, level)}
	p.Log.Info("starting", env.Attrs()...)
	stopTelemetry, err := telemetry.Setup(ctx, service)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	p.OnStop("telemetry", stopTelemetry)
	return p, nil
}

// OnStop has Stop run stop (logging a failure under name) before what was
// registered earlier: a database client registered after telemetry
// disconnects before telemetry flushes.
func (p *Process) OnStop(name string, stop func(context.Context) error) {
	p.stops = append(p.stops, func() { shutdown.Do(p.Log, name, stop) })
}

// Stop undoes what was started, last first.
func (p *Process) Stop() {
	for i := len(p.stops) - 1; i >= 0; i-- {
		p.stops[i]()
	}
}
