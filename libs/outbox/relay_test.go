package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
)

func TestMain(m *testing.M) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	testkit.Main(m)
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// collection returns a fresh collection with the outbox index.
func collection(t *testing.T) *mongo.Collection {
	t.Helper()
	return collectionNamed(t, "things")
}

// collectionNamed is collection with another name: the backlog metrics are
// per collection name, and tests run in parallel.
func collectionNamed(t *testing.T, name string) *mongo.Collection {
	t.Helper()
	coll := testkit.Mongo(t).Collection(name)
	testkit.Must(t, mongox.EnsureIndexes(context.Background(), coll,
		mongox.Index("outbox", false, outbox.CountField)), "indexes")
	return coll
}

func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, err := events.Connect(ctx, url, "relay-test", testkit.Logger(t))
	testkit.Must(t, err, "connect")
	t.Cleanup(nc.Close)
	testkit.Must(t, events.EnsureStream(ctx, js), "ensure stream")
	return js
}

// addEvents records n events in the outbox of document id the way a store
// does: one update that makes the change and adds the events.
func addEvents(t *testing.T, ctx context.Context, coll *mongo.Collection, id any, n int) []events.Event {
	t.Helper()
	evs := make([]events.Event, n)
	at := time.Now()
	for i := range evs {
		ev, err := events.New(ctx, "/test", events.DocumentDeleted, events.DocumentDeletedData{DocumentID: fmt.Sprint(id)},
			at.Add(time.Duration(i)*time.Millisecond))
		testkit.Must(t, err, "new event")
		evs[i] = ev
	}
	update := bson.M{"$set": bson.M{"deletedAt": at}}
	testkit.Must(t, outbox.Add(update, evs...), "outbox.Add")
	_, err := coll.UpdateOne(context.Background(), bson.M{"_id": id}, update, options.UpdateOne().SetUpsert(true))
	testkit.Must(t, err, fmt.Sprint("update ", id))
	return evs
}

type pending struct {
	count   int64
	entries int
}

func pendingOf(t *testing.T, coll *mongo.Collection) map[string]pending {
	t.Helper()
	cur, err := coll.Find(context.Background(), bson.M{})
	testkit.Must(t, err, "find")
	var docs []struct {
		ID     bson.RawValue  `bson:"_id"`
		Count  int64          `bson:"outboxCount"`
		Outbox map[string]any `bson:"outbox"`
	}
	testkit.Must(t, cur.All(context.Background(), &docs), "read")
	out := map[string]pending{}
	for _, d := range docs {
		key := d.ID.String()
		if s, ok := d.ID.StringValueOK(); ok {
			key = s
		}
		out[key] = pending{count: d.Count, entries: len(d.Outbox)}
	}
	return out
}

func allPublished(t *testing.T, coll *mongo.Collection) bool {
	for _, p := range pendingOf(t, coll) {
		if p.count != 0 || p.entries != 0 {
			return false
		}
	}
	return true
}

// streamMsgIDs returns the Nats-Msg-Id of every message in LIBRARY, in
// stream order.
func streamMsgIDs(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, events.Stream)
	testkit.Must(t, err, "stream")
	info, err := s.Info(ctx)
	testkit.Must(t, err, "stream info")
	var ids []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		testkit.Must(t, err, fmt.Sprintf("message %d", seq))
		ids = append(ids, m.Header.Get(jetstream.MsgIDHeader))
	}
	return ids
}

// run starts r and returns a function that stops it and checks that Run
// returned nil promptly.
func run(t *testing.T, r *outbox.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v on cancel, want nil", err)
				}
			case <-time.After(10 * time.Second):
				t.Error("Run did not return within 10s of cancel")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// countingPublisher counts publishes and failures.
type countingPublisher struct {
	outbox.Publisher
	calls, failures atomic.Int64
}

func (p *countingPublisher) Publish(ctx context.Context, m events.Message) error {
	p.calls.Add(1)
	err := p.Publisher.Publish(ctx, m)
	if err != nil {
		p.failures.Add(1)
	}
	return err
}

func TestRelayPublishesOnceRemovesAndSweeps(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	js := connect(t, testkit.NATS(t).ClientURL())

	// The request that deleted the document was traced.
	reqCtx, span := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "DELETE")
	evs := addEvents(t, reqCtx, coll, "a", 2)
	span.End()

	var afterCalls atomic.Int64
	var sweptWhileEntriesLeft atomic.Bool
	relay := outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), testkit.Logger(t), outbox.RelayConfig{
		Interval: time.Hour, // only the first pass and nudges publish in this test
		AfterPublish: func(context.Context) error {
			afterCalls.Add(1)
			if !allPublished(t, coll) {
				sweptWhileEntriesLeft.Store(true)
			}
			return nil
		},
	}, coll)
	stop := run(t, relay)

	waitFor(t, 10*time.Second, "both entries published and removed", func() bool {
		return len(streamMsgIDs(t, js)) == 2 && allPublished(t, coll) && afterCalls.Load() >= 1
	})
	ids := streamMsgIDs(t, js)
	if ids[0] != evs[0].ID || ids[1] != evs[1].ID {
		t.Errorf("stream message ids %v, want the event ids oldest first %v %v", ids, evs[0].ID, evs[1].ID)
	}
	if sweptWhileEntriesLeft.Load() {
		t.Error("AfterPublish ran while entries were still pending")
	}
	s, _ := js.Stream(context.Background(), events.Stream)
	m, err := s.GetMsg(context.Background(), 1)
	testkit.Must(t, err, "first message")
	if got := m.Header.Get("traceparent"); got == "" || got != evs[0].TraceParent {
		t.Errorf("traceparent header %q, want the stored %q", got, evs[0].TraceParent)
	}
	if p := pendingOf(t, coll)["a"]; p.count != 0 || p.entries != 0 {
		t.Errorf("document a: outboxCount %d with %d entries, want 0 and 0", p.count, p.entries)
	}

	// A nudge publishes at once, although the next poll is an hour away.
	callsBefore := afterCalls.Load()
	more := addEvents(t, context.Background(), coll, "b", 1)
	began := time.Now()
	relay.Nudge()
	waitFor(t, 3*time.Second, "the nudged entry published", func() bool {
		return len(streamMsgIDs(t, js)) == 3 && allPublished(t, coll)
	})
	t.Logf("write to publish after a nudge: %v", time.Since(began))
	if ids := streamMsgIDs(t, js); ids[2] != more[0].ID {
		t.Errorf("third message id %q, want %q", ids[2], more[0].ID)
	}
	waitFor(t, 3*time.Second, "AfterPublish after the nudged pass", func() bool { return afterCalls.Load() > callsBefore })
	stop()
}

func TestRelayKeepsEntriesDuringNATSOutage(t *testing.T) {
	t.Parallel()
	coll := collectionNamed(t, "outage")
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free address")
	dir := t.TempDir()
	srv := testkit.NATSAt(t, addr, dir)
	js := connect(t, srv.ClientURL())

	pub := &countingPublisher{Publisher: events.NewPublisher(js, testkit.Logger(t))}
	relay := outbox.NewRelay(pub, testkit.Logger(t), outbox.RelayConfig{
		Interval: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, PublishTimeout: 300 * time.Millisecond,
	}, coll)
	run(t, relay)

	want := map[string]bool{}
	for _, ev := range addEvents(t, context.Background(), coll, "before", 1) {
		want[ev.ID] = true
	}
	waitFor(t, 10*time.Second, "the first entry published", func() bool { return allPublished(t, coll) })

	srv.Shutdown()
	srv.WaitForShutdown()
	for _, id := range []string{"x", "y"} {
		for _, ev := range addEvents(t, context.Background(), coll, id, 3) {
			want[ev.ID] = true
		}
	}
	relay.Nudge()
	failed := pub.failures.Load()
	waitFor(t, 10*time.Second, "publishes failing while NATS is down", func() bool { return pub.failures.Load() >= failed+3 })
	if p := pendingOf(t, coll); p["x"].entries != 3 || p["x"].count != 3 || p["y"].entries != 3 || p["y"].count != 3 {
		t.Fatalf("entries during the outage: %+v, want 3 kept in x and in y", p)
	}
	// The backlog shows in the metrics, with the time of its oldest entry.
	waitFor(t, 10*time.Second, "the backlog in the metrics", func() bool {
		return testkit.Metric(t, "doclib_outbox_pending_events", "collection", "outage") == 6
	})
	if ts := testkit.Metric(t, "doclib_outbox_oldest_pending_event_timestamp_seconds", "collection", "outage"); ts < float64(time.Now().Add(-time.Minute).Unix()) || ts > float64(time.Now().Unix()+1) {
		t.Errorf("oldest pending entry at %v, want within the last minute", ts)
	}

	// Same address, same store: the stream and its dedup state come back.
	testkit.NATSAt(t, addr, dir)
	waitFor(t, 20*time.Second, "every entry published after the restart", func() bool { return allPublished(t, coll) })
	waitFor(t, 10*time.Second, "no backlog in the metrics", func() bool {
		return testkit.Metric(t, "doclib_outbox_pending_events", "collection", "outage") == 0 &&
			testkit.Metric(t, "doclib_outbox_oldest_pending_event_timestamp_seconds", "collection", "outage") == 0
	})
	ids := streamMsgIDs(t, js)
	got := map[string]bool{}
	for _, id := range ids {
		if got[id] {
			t.Errorf("event %s stored twice", id)
		}
		got[id] = true
	}
	if len(ids) != len(want) {
		t.Errorf("stream holds %d messages, want %d", len(ids), len(want))
	}
	for id := range want {
		if !got[id] {
			t.Errorf("event %s lost", id)
		}
	}
	t.Logf("%d publish attempts, %d failed", pub.calls.Load(), pub.failures.Load())
}

// A pass stops at the first collection whose publishes fail, but the
// backlog of every collection is still measured: taxonomy relays
// categories then tags, and a category deleted during a NATS outage must
// not freeze the tags' gauges at what they were before it.
func TestRelayMeasuresEveryCollectionDuringNATSOutage(t *testing.T) {
	t.Parallel()
	first, second := collectionNamed(t, "backlog-first"), collectionNamed(t, "backlog-second")
	srv := testkit.NATSAt(t, mustFreeAddr(t), t.TempDir())
	js := connect(t, srv.ClientURL())
	srv.Shutdown()
	srv.WaitForShutdown()

	addEvents(t, context.Background(), first, "a", 3)
	addEvents(t, context.Background(), second, "b", 2)
	pub := &countingPublisher{Publisher: events.NewPublisher(js, testkit.Logger(t))}
	run(t, outbox.NewRelay(pub, testkit.Logger(t), outbox.RelayConfig{
		Interval: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, PublishTimeout: 100 * time.Millisecond,
	}, first, second))

	waitFor(t, 10*time.Second, "the backlog of both collections in the metrics", func() bool {
		return testkit.Metric(t, "doclib_outbox_pending_events", "collection", "backlog-first") == 3 &&
			testkit.Metric(t, "doclib_outbox_pending_events", "collection", "backlog-second") == 2 &&
			testkit.Metric(t, "doclib_outbox_oldest_pending_event_timestamp_seconds", "collection", "backlog-second") > 0
	})
	if pub.failures.Load() == 0 {
		t.Error("no publish failed, want NATS down")
	}
}

func mustFreeAddr(t *testing.T) string {
	t.Helper()
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free address")
	return addr
}

func TestTwoRelaysPublishEachEventOnce(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	url := testkit.NATS(t).ClientURL()
	var want []string
	for d := range 10 {
		// Stores use ObjectIDs, tests strings: both kinds of _id.
		var id any = fmt.Sprintf("doc%d", d)
		if d%2 == 0 {
			id = bson.NewObjectID()
		}
		for _, ev := range addEvents(t, context.Background(), coll, id, 5) {
			want = append(want, ev.ID)
		}
	}

	// Two replicas, each with its own connection.
	var pubs []*countingPublisher
	for range 2 {
		js := connect(t, url)
		pub := &countingPublisher{Publisher: events.NewPublisher(js, testkit.Logger(t))}
		pubs = append(pubs, pub)
		run(t, outbox.NewRelay(pub, testkit.Logger(t), outbox.RelayConfig{Interval: 20 * time.Millisecond}, coll))
	}
	js := connect(t, url)
	waitFor(t, 30*time.Second, "all outboxes emptied", func() bool { return allPublished(t, coll) })

	ids := streamMsgIDs(t, js)
	if len(ids) != len(want) {
		t.Errorf("stream holds %d messages for %d events", len(ids), len(want))
	}
	got := map[string]int{}
	for _, id := range ids {
		got[id]++
	}
	for _, id := range want {
		if got[id] != 1 {
			t.Errorf("event %s in the stream %d times, want 1", id, got[id])
		}
	}
	for id, p := range pendingOf(t, coll) {
		if p.count != 0 {
			t.Errorf("document %s: outboxCount %d, want 0", id, p.count)
		}
	}
	t.Logf("publishes: relay 1 %d, relay 2 %d, for %d events (the surplus was deduplicated by the stream)",
		pubs[0].calls.Load(), pubs[1].calls.Load(), len(want))
}

func TestRelayRetriesAfterPublishUntilItSucceeds(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	js := connect(t, testkit.NATS(t).ClientURL())
	var calls atomic.Int64
	relay := outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), testkit.Logger(t), outbox.RelayConfig{
		Interval: 20 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		AfterPublish: func(context.Context) error {
			if calls.Add(1) <= 2 {
				return errors.New("sweep failed")
			}
			return nil
		},
	}, coll)
	addEvents(t, context.Background(), coll, "a", 1)
	run(t, relay)
	waitFor(t, 10*time.Second, "AfterPublish retried until it succeeded", func() bool { return calls.Load() >= 3 })
}

func TestRelayRepairsCountWithoutEntries(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	js := connect(t, testkit.NATS(t).ClientURL())
	_, err := coll.InsertOne(context.Background(), bson.M{"_id": "stale", outbox.CountField: 2})
	testkit.Must(t, err, "insert")
	run(t, outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), testkit.Logger(t),
		outbox.RelayConfig{Interval: 20 * time.Millisecond}, coll))
	waitFor(t, 10*time.Second, "outboxCount reset", func() bool { return pendingOf(t, coll)["stale"].count == 0 })
}

// logCounter counts log records by level.
type logCounter struct {
	mu     sync.Mutex
	counts map[slog.Level]int
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[r.Level]++
	return nil
}
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }
func (l *logCounter) count(level slog.Level) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[level]
}

func TestRelayLogsAnOutageOnceAndStopsWhileFailing(t *testing.T) {
	t.Parallel()
	// A MongoDB that is not there.
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:1/").
		SetServerSelectionTimeout(100 * time.Millisecond))
	testkit.Must(t, err, "client")
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	js := connect(t, testkit.NATS(t).ClientURL())

	logs := &logCounter{counts: map[slog.Level]int{}}
	relay := outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), slog.New(logs),
		outbox.RelayConfig{Interval: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		client.Database("nowhere").Collection("things"))
	stop := run(t, relay)
	waitFor(t, 10*time.Second, "several failed passes", func() bool { return logs.count(slog.LevelDebug) >= 3 })
	if n := logs.count(slog.LevelError); n != 1 {
		t.Errorf("%d error logs during one outage, want 1", n)
	}
	stop()
}

// During a burst of nudged passes the hook runs at most once per
// AfterEvery, and still once after the last removal without a nudge.
func TestRelayRunsAfterPublishAtMostOncePerAfterEvery(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	js := connect(t, testkit.NATS(t).ClientURL())
	var mu sync.Mutex
	var calls []time.Time
	const every = 300 * time.Millisecond
	relay := outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), testkit.Logger(t), outbox.RelayConfig{
		Interval:   time.Hour,
		AfterEvery: every,
		AfterPublish: func(context.Context) error {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, time.Now())
			return nil
		},
	}, coll)
	stop := run(t, relay)
	defer stop()
	for i := range 8 {
		addEvents(t, context.Background(), coll, fmt.Sprintf("d%d", i), 1)
		relay.Nudge()
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, 10*time.Second, "every entry published", func() bool { return len(streamMsgIDs(t, js)) == 8 && allPublished(t, coll) })
	last := time.Now()
	waitFor(t, 3*time.Second, "the hook after the last removal", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) > 0 && !calls[len(calls)-1].Before(last.Add(-every))
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].Sub(calls[i-1]); gap < every-10*time.Millisecond {
			t.Errorf("hook runs %d and %d are %v apart, want at least %v", i, i+1, gap, every)
		}
	}
}

// A slow hook (a sweep waiting on an unreachable object store) does not
// hold up publishing.
func TestRelayPublishesWhileTheHookIsSlow(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	js := connect(t, testkit.NATS(t).ClientURL())
	release := make(chan struct{})
	var calls atomic.Int64
	relay := outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), testkit.Logger(t), outbox.RelayConfig{
		Interval: time.Hour, AfterEvery: time.Millisecond,
		AfterPublish: func(ctx context.Context) error {
			calls.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		},
	}, coll)
	stop := run(t, relay)
	defer func() { close(release); stop() }()
	waitFor(t, 5*time.Second, "the hook running (pending from the start)", func() bool { return calls.Load() == 1 })
	addEvents(t, context.Background(), coll, "a", 1)
	relay.Nudge()
	start := time.Now()
	waitFor(t, 5*time.Second, "the entry published while the hook hangs", func() bool { return allPublished(t, coll) })
	if d := time.Since(start); d > time.Second {
		t.Errorf("published %v after the nudge, want well under a second", d)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("hook started %d times while one run hangs, want 1", n)
	}
}

// Stopping makes one last pass: what requests recorded just before the
// stop leaves now, not at the next start.
func TestRelayMakesALastPassWhenStopped(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	js := connect(t, testkit.NATS(t).ClientURL())
	relay := outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), testkit.Logger(t),
		outbox.RelayConfig{Interval: time.Hour}, coll)
	stop := relay.Start()
	time.Sleep(100 * time.Millisecond) // the first pass is done; the next poll is an hour away
	addEvents(t, context.Background(), coll, "a", 2)
	stop()
	if !allPublished(t, coll) || len(streamMsgIDs(t, js)) != 2 {
		t.Errorf("after stop: entries left %v, stream %v", pendingOf(t, coll), streamMsgIDs(t, js))
	}
}

// While the relay drains a backlog (full batch after full batch), the hook
// keeps running, at most once per AfterEvery.
func TestRelayRunsTheHookDuringABacklog(t *testing.T) {
	t.Parallel()
	coll := collection(t)
	js := connect(t, testkit.NATS(t).ClientURL())
	for i := range 40 {
		addEvents(t, context.Background(), coll, fmt.Sprintf("d%d", i), 1)
	}
	var calls atomic.Int64
	relay := outbox.NewRelay(events.NewPublisher(js, testkit.Logger(t)), testkit.Logger(t), outbox.RelayConfig{
		Interval: time.Hour, BatchSize: 1, AfterEvery: time.Millisecond,
		AfterPublish: func(context.Context) error { calls.Add(1); return nil },
	}, coll)
	var during int64
	stop := run(t, relay)
	waitFor(t, 20*time.Second, "the backlog drained", func() bool {
		if !allPublished(t, coll) {
			during = calls.Load()
			return false
		}
		return true
	})
	stop()
	if during < 3 {
		t.Errorf("hook ran %d times while 40 single-entry batches drained, want it to keep running", during)
	}
}
