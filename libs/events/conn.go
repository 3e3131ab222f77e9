package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/config"
)

// Stream settings; the package doc says why.
const (
	streamMaxAge     = 14 * 24 * time.Hour
	dlqMaxAge        = 30 * 24 * time.Hour
	duplicatesWindow = time.Hour
)

// Connect connects to the NATS server at url as name (shown by the server's
// monitoring) and returns the connection and its JetStream context, once
// the first connection is made or ctx ends. See Dial.
func Connect(ctx context.Context, url, name string, log *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, js, err := Dial(url, name, log)
	if err != nil {
		return nil, nil, err
	}
	if err := WaitConnected(ctx, nc); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("nats connect %s: %w", config.Redact(url), err)
	}
	return nc, js, nil
}

// Dial starts connecting to the NATS server at url as name and returns at
// once, connected or not: a service serves its routes while NATS is down
// (the outbox keeps the events), also when it starts during the outage.
//
// The connection never gives up: it reconnects forever, because a service
// must survive a NATS restart without being restarted itself. Connects,
// disconnects and reconnects are logged. Only a malformed url is an error.
func Dial(url, name string, log *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url,
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(time.Second),
		nats.RetryOnFailedConnect(true),
		nats.ConnectHandler(func(c *nats.Conn) {
			log.Info("nats connected", "url", c.ConnectedUrlRedacted(), "name", name)
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil on a deliberate Close or Drain
				log.Warn("nats disconnected", "error", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", "url", c.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Error("nats asynchronous error", "subject", subject, "error", err)
		}),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("nats connect %s: %w", config.Redact(url), err)
	}
	if !nc.IsConnected() {
		log.Warn("nats not reachable yet; connecting in the background", "url", config.Redact(url))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// WaitConnected returns once nc is connected, or with ctx's error: with
// RetryOnFailedConnect, nats.Connect returns at once even when the server
// is not reachable.
func WaitConnected(ctx context.Context, nc *nats.Conn) error {
	ch := nc.StatusChanged(nats.CONNECTED, nats.CLOSED)
	defer nc.RemoveStatusListener(ch)
	if nc.IsConnected() {
		return nil
	}
	select {
	case st := <-ch:
		if st == nats.CLOSED {
			return errors.New("connection closed")
		}
		return nil
	case <-ctx.Done():
		if nc.IsConnected() {
			return nil
		}
		return ctx.Err()
	}
}

// EnsureStream creates the LIBRARY and LIBRARY_DLQ streams, or updates them
// to the settings below. It is idempotent and safe when several replicas
// start together.
func EnsureStream(ctx context.Context, js jetstream.JetStream) error {
	for _, cfg := range []jetstream.StreamConfig{
		{
			Name:        Stream,
			Description: "Deletion events of the document library (CONTRACT.md §6).",
			Subjects:    []string{StreamSubjects},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      streamMaxAge,
			Duplicates:  duplicatesWindow,
			Storage:     jetstream.FileStorage,
			Discard:     jetstream.DiscardOld,
		},
		{
			Name:        DLQStream,
			Description: "Events that a consumer gave up on, under dlq.<consumer>.",
			Subjects:    []string{DLQSubjects},
			Retention:   jetstream.LimitsPolicy,
			MaxAge:      dlqMaxAge,
			Duplicates:  duplicatesWindow,
			Storage:     jetstream.FileStorage,
			Discard:     jetstream.DiscardOld,
		},
	} {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("ensure stream %s: %w", cfg.Name, err)
		}
	}
	return nil
}
