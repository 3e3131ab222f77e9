package changes_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/gateway/internal/changes"
)

// NATS restarted under an open stream: the client, resuming with the last
// id it got (at once if its stream ended, as EventSource does), receives
// the change made after the restart, and nothing twice.
func TestNATSRestartedUnderAStream(t *testing.T) {
	t.Parallel()
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free port")
	dir := t.TempDir()
	ns := testkit.NATSAt(t, addr, dir)
	bus, err := events.Open(t.Context(), "nats://"+addr, "changes-restart-test", testkit.Logger(t))
	testkit.Must(t, err, "open")
	t.Cleanup(bus.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	testkit.Must(t, events.WaitConnected(ctx, bus.NC), "connected")
	testkit.Must(t, events.EnsureStream(ctx, bus.JS), "streams")
	s := changes.New(t.Context(), bus.JS, config, testkit.Logger(t))
	srv := httptest.NewServer(s.Handler(changes.BackOffice, func(*http.Request) string { return "client" }))
	t.Cleanup(srv.Close)

	st := open(t, srv.URL, "")
	publish(t, bus.JS, events.TagCreated, events.TagData{TagID: "before", CategoryID: "c", Name: "B"})
	first := st.next(t)
	ns.Shutdown()
	ns.WaitForShutdown()
	testkit.NATSAt(t, addr, dir)
	testkit.Must(t, events.WaitConnected(ctx, bus.NC), "reconnected")

	got := make(chan message, 1)
	go func() { // the stream may go on, or end
		if m, err := st.tryNext(); err == nil {
			got <- m
		}
	}()
	publishEventually(t, bus, events.TagData{TagID: "after", CategoryID: "c", Name: "A"})
	select {
	case m := <-got:
		if m.Event != "tag.created" || m.ID != first.ID+1 {
			t.Errorf("after the restart the open stream sent %+v, want tag.created #%d", m, first.ID+1)
		}
	case <-time.After(10 * time.Second):
		st.cancel()
		again := openEventually(t, srv.URL, strconv.FormatUint(first.ID, 10))
		if m := again.next(t); m.Event != "tag.created" || m.ID != first.ID+1 {
			t.Errorf("resumed after the restart: %+v, want tag.created #%d", m, first.ID+1)
		}
	}
}

// publishEventually publishes a tag.created, retrying while JetStream
// comes back.
func publishEventually(t *testing.T, bus *events.Bus, data events.TagData) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ev, err := events.New(context.Background(), "/taxonomy", events.TagCreated, data, time.Now())
		testkit.Must(t, err, "event")
		m, err := events.MessageOf(ev)
		testkit.Must(t, err, "message")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err = bus.JS.Publish(ctx, events.TagCreated, m.Data)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("publish after the restart: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// openEventually opens a stream, retrying its 503 while NATS comes back.
func openEventually(t *testing.T, url, lastID string) *sse {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		req, _ := http.NewRequest("HEAD", url, nil)
		if res, err := http.DefaultClient.Do(req); err == nil && res.StatusCode == 200 {
			_ = res.Body.Close()
			if s := open(t, url, lastID); s.res.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream does not open 15 s after NATS came back")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
