package events_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
)

// A service opens its bus while NATS is down: Open returns at once, Ready
// says NATS is not connected, and once NATS is up the streams are made,
// what waits for NATS starts, and Close drains the connection.
func TestBusOpensWhileNATSIsDown(t *testing.T) {
	ctx := context.Background()
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free address")
	start := time.Now()
	bus, err := events.Open(ctx, "nats://"+addr, "test", testkit.Logger(t))
	testkit.Must(t, err, "open")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open took %s with NATS down; want it to return at once", d)
	}
	var started, stopped atomic.Bool
	stop := bus.WhenReady("test consumers", func(ctx context.Context) (func(context.Context) error, error) {
		if _, err := bus.JS.Stream(ctx, events.Stream); err != nil {
			t.Errorf("started before the stream exists: %v", err)
		}
		started.Store(true)
		return func(context.Context) error { stopped.Store(true); return nil }, nil
	})
	if bus.Ready(ctx) == nil {
		t.Error("Ready with NATS down: nil, want an error")
	}
	if started.Load() {
		t.Fatal("WhenReady ran before NATS was up")
	}
	testkit.NATSAt(t, addr, t.TempDir())
	deadline := time.Now().Add(30 * time.Second)
	for !started.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !started.Load() {
		t.Fatal("WhenReady did not run within 30 s of NATS starting")
	}
	testkit.Must(t, bus.Ready(ctx), "ready with NATS up")
	testkit.Must(t, stop(ctx), "stop")
	if !stopped.Load() {
		t.Error("stop did not stop what WhenReady started")
	}
	bus.Close()
	if !bus.NC.IsClosed() && !bus.NC.IsDraining() {
		t.Error("NATS connection still open after Close")
	}
}

// WhenReady stopped before NATS ever came: nothing starts, stop returns,
// and Close returns although NATS never answered.
func TestBusStoppedBeforeNATS(t *testing.T) {
	ctx := context.Background()
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free address")
	bus, err := events.Open(ctx, "nats://"+addr, "test", testkit.Logger(t))
	testkit.Must(t, err, "open")
	stop := bus.WhenReady("never", func(context.Context) (func(context.Context) error, error) {
		t.Error("started without NATS")
		return nil, nil
	})
	testkit.Must(t, stop(ctx), "stop")
	bus.Close()
}
