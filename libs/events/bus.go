package events

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/periodic"
)

// Bus is a service's connection to NATS with the library's streams. It is
// opened without waiting for NATS: a service starts and serves its routes
// while NATS is down (deletions keep their events in the outbox, the relay
// retries), and what needs NATS starts once it is there (WhenReady).
type Bus struct {
	NC *nats.Conn
	JS jetstream.JetStream

	log         *slog.Logger
	ready       <-chan struct{} // closed once connected with the streams ensured
	stopStreams func()
}

// Open starts connecting to NATS at url as name and returns at once. In
// the background, once connected, it ensures the library's streams
// (retried until done). Only a malformed url is an error.
func Open(ctx context.Context, url, name string, log *slog.Logger) (*Bus, error) {
	nc, js, err := Dial(url, name, log)
	if err != nil {
		return nil, err
	}
	ready, stop := periodic.Until(ctx, log, "nats streams", func(ctx context.Context) error {
		if err := WaitConnected(ctx, nc); err != nil {
			return err
		}
		return EnsureStream(ctx, js)
	})
	return &Bus{NC: nc, JS: js, log: log, ready: ready, stopStreams: stop}, nil
}

// WhenReady runs start in the background once NATS is connected and the
// streams exist, retrying it while it fails. The returned stop waits for
// a start under way, then stops what it started; when start never ran, it
// only stops waiting. Catalog starts its consumers this way, so it serves
// documents while NATS is down and consumes once NATS is up.
func (b *Bus) WhenReady(what string, start func(ctx context.Context) (stop func(context.Context) error, err error)) (stop func(context.Context) error) {
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
		case <-b.ready:
		case <-bg.Done():
			return
		}
		_, stopRetries = periodic.Until(bg, b.log, what, func(ctx context.Context) error {
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

// Ready is a readiness check: the connection to NATS is up.
func (b *Bus) Ready(context.Context) error {
	if !b.NC.IsConnected() {
		return errors.New("not connected to NATS (" + b.NC.Status().String() + ")")
	}
	return nil
}

// Close stops ensuring the streams and drains the connection (at once when
// it is not connected).
func (b *Bus) Close() {
	b.stopStreams()
	_ = b.NC.Drain()
}
