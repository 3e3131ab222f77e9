// Package process holds what each data service of the library opens when it
// starts, in the same order for all of them: its logger, telemetry, the
// MongoDB client and the NATS connection (the LIBRARY stream ensured once
// NATS answers). Close releases them in the reverse order when the service
// exits.
package process

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/logging"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/periodic"
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

	natsReady <-chan struct{} // closed once connected with the streams ensured
	closers   []func()
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

// OpenNATS starts connecting to NATS at url and returns at once: the
// service starts and serves its routes while NATS is down (deletions keep
// their events in the outbox, the relay retries). In the background, once
// connected, it ensures the library's streams (retried until done) and
// then runs what WhenNATS was given. Only a malformed url is an error.
func (p *Process) OpenNATS(ctx context.Context, url string) error {
	nc, js, err := events.Dial(url, p.Name, p.Log)
	if err != nil {
		return err
	}
	p.NATS, p.JS = nc, js
	ready, stop := periodic.Until(ctx, p.Log, "nats streams", func(ctx context.Context) error {
		if err := events.WaitConnected(ctx, nc); err != nil {
			return err
		}
		return events.EnsureStream(ctx, js)
	})
	p.natsReady = ready
	p.onClose(func() {
		stop()
		_ = nc.Drain() // closes at once when not connected
	})
	return nil
}

// WhenNATS runs start in the background once NATS is connected and the
// streams exist, retrying it while it fails. The returned stop waits for
// a start under way, then stops what it started; when start never ran, it
// only stops waiting. Catalog starts its consumers this way, so it serves
// documents while NATS is down and consumes once NATS is up.
func (p *Process) WhenNATS(what string, start func(ctx context.Context) (stop func(context.Context) error, err error)) (stop func(context.Context) error) {
	if p.natsReady == nil {
		panic("process: WhenNATS before OpenNATS")
	}
	bg, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var (
		mu          sync.Mutex
		stopStarted func(context.Context) error
		stopRetries func()
	)
	go func() {
		defer close(done)
		select {
		case <-p.natsReady:
		case <-bg.Done():
			return
		}
		_, stopRetries = periodic.Until(bg, p.Log, what, func(ctx context.Context) error {
			s, err := start(ctx)
			if err == nil {
				mu.Lock()
				stopStarted = s
				mu.Unlock()
			}
			return err
		})
	}()
	return func(ctx context.Context) error {
		cancel()
		<-done
		if stopRetries != nil {
			stopRetries()
		}
		mu.Lock()
		defer mu.Unlock()
		if stopStarted == nil {
			return nil
		}
		return stopStarted(ctx)
	}
}

// Health returns the readiness of this process: MongoDB is required (no
// route works without it); NATS, once opened, and the extra checks are
// reported without failing readiness, since their outage only degrades
// the routes that need them.
func (p *Process) Health(extra map[string]httpx.Check) *httpx.Health {
	h := httpx.NewHealth(map[string]httpx.Check{"mongodb": mongox.Ping(p.Mongo)})
	if p.NATS != nil {
		h.Report(map[string]httpx.Check{"nats": events.Ready(p.NATS)})
	}
	return h.Report(extra)
}

func (p *Process) onClose(f func()) { p.closers = append(p.closers, f) }

// Close releases what was opened, the last opened first.
func (p *Process) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}
