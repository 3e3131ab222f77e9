package events_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
)

// recorder is a handler that records each call and answers with fail(n, e),
// n counting the calls for e's id from 1.
type recorder struct {
	mu    sync.Mutex
	calls []call
	fail  func(n int, e events.Envelope) error
}

type call struct {
	id string
	at time.Time
}

func (r *recorder) handle(_ context.Context, e events.Envelope) error {
	r.mu.Lock()
	r.calls = append(r.calls, call{id: e.ID, at: time.Now()})
	n := 0
	for _, c := range r.calls {
		if c.id == e.ID {
			n++
		}
	}
	fail := r.fail
	r.mu.Unlock()
	if fail != nil {
		return fail(n, e)
	}
	return nil
}

func (r *recorder) callsFor(id string) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []call
	for _, c := range r.calls {
		if c.id == id {
			out = append(out, c)
		}
	}
	return out
}

func newEvent(t *testing.T, docID string) events.Event {
	t.Helper()
	ev, err := events.New(context.Background(), "/catalog", events.DocumentDeleted,
		events.DocumentDeletedData{DocumentID: docID}, time.Now())
	testkit.Must(t, err, "new event")
	return ev
}

func consumerInfo(t *testing.T, js jetstream.JetStream, name string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(context.Background(), events.Stream, name)
	testkit.Must(t, err, "consumer "+name)
	info, err := c.Info(context.Background())
	testkit.Must(t, err, "consumer info")
	return info
}

// allAcked reports whether every message of the consumer's subjects was
// acked or terminated.
func allAcked(t *testing.T, js jetstream.JetStream, name string) bool {
	info := consumerInfo(t, js, name)
	return info.NumAckPending == 0 && info.NumPending == 0
}

func dlqMessage(t *testing.T, js jetstream.JetStream, consumer string) *jetstream.RawStreamMsg {
	t.Helper()
	s, err := js.Stream(context.Background(), events.DLQStream)
	testkit.Must(t, err, "dlq stream")
	m, err := s.GetLastMsgForSubject(context.Background(), "dlq."+consumer)
	testkit.Must(t, err, "dead-letter message of "+consumer)
	return m
}

func start(t *testing.T, js jetstream.JetStream, cfg events.ConsumerConfig, h events.Handler) *events.Consumer {
	t.Helper()
	if cfg.Subjects == nil {
		cfg.Subjects = []string{events.DocumentDeleted}
	}
	c, err := events.StartConsumer(context.Background(), js, cfg, h, testkit.Logger(t))
	testkit.Must(t, err, "start consumer")
	t.Cleanup(func() { stop(t, c) })
	return c
}

func TestConsumerAcksOnSuccess(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	pub := events.NewPublisher(js, testkit.Logger(t))
	rec := &recorder{}
	cfg := events.ConsumerConfig{Name: "test-success"}
	c := start(t, js, cfg, rec.handle)

	ev := newEvent(t, "d1")
	testkit.Must(t, pub.PublishEvent(context.Background(), ev), "publish")
	waitFor(t, 10*time.Second, "the event handled and acked", func() bool {
		return len(rec.callsFor(ev.ID)) == 1 && allAcked(t, js, cfg.Name)
	})
	if info := consumerInfo(t, js, cfg.Name); info.NumRedelivered != 0 {
		t.Errorf("%d redeliveries after a successful handler, want 0", info.NumRedelivered)
	}

	// Start-up again with the same settings (CreateOrUpdateConsumer is
	// idempotent), and the acked event is not handed over again.
	stop(t, c)
	start(t, js, cfg, rec.handle)
	ev2 := newEvent(t, "d2")
	testkit.Must(t, pub.PublishEvent(context.Background(), ev2), "publish")
	waitFor(t, 10*time.Second, "the second event handled", func() bool { return len(rec.callsFor(ev2.ID)) == 1 })
	if n := len(rec.callsFor(ev.ID)); n != 1 {
		t.Errorf("first event handled %d times after a restart, want 1", n)
	}
	wantMetric(t, "doclib_events_applied_total", 2, "consumer", cfg.Name)
	wantMetric(t, "doclib_events_retried_total", 0, "consumer", cfg.Name)
}

// wantMetric fails t unless the process's metric name, over the series with
// labels, is want.
func wantMetric(t *testing.T, name string, want float64, labels ...string) {
	t.Helper()
	if got := testkit.Metric(t, name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

func TestConsumerRetriesAFailureWithBackoff(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	pub := events.NewPublisher(js, testkit.Logger(t))
	const delay = 300 * time.Millisecond
	rec := &recorder{fail: func(n int, _ events.Envelope) error {
		if n == 1 {
			return errors.New("database briefly unavailable")
		}
		return nil
	}}
	cfg := events.ConsumerConfig{Name: "test-transient", Backoff: []time.Duration{delay}}
	start(t, js, cfg, rec.handle)

	ev := newEvent(t, "d1")
	testkit.Must(t, pub.PublishEvent(context.Background(), ev), "publish")
	waitFor(t, 10*time.Second, "a redelivery that succeeds and is acked", func() bool {
		return len(rec.callsFor(ev.ID)) == 2 && allAcked(t, js, cfg.Name)
	})
	calls := rec.callsFor(ev.ID)
	if gap := calls[1].at.Sub(calls[0].at); gap < delay-50*time.Millisecond {
		t.Errorf("redelivered after %v, want the backoff %v (NakWithDelay)", gap, delay)
	}
	if streamMsgs(t, js, events.DLQStream) != 0 {
		t.Error("a transient failure that then succeeded reached dead-letter")
	}
	wantMetric(t, "doclib_events_retried_total", 1, "consumer", cfg.Name, "reason", "failed")
	wantMetric(t, "doclib_events_applied_total", 1, "consumer", cfg.Name)
}

func TestConsumerDuplicateEvents(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	pub := events.NewPublisher(js, testkit.Logger(t))
	rec := &recorder{}
	cfg := events.ConsumerConfig{Name: "test-duplicate"}
	start(t, js, cfg, rec.handle)

	// A republish within the duplicate window (the relay retried) is
	// dropped upstream by the stream: the handler sees the event once.
	ev := newEvent(t, "d1")
	testkit.Must(t, pub.PublishEvent(context.Background(), ev), "publish")
	testkit.Must(t, pub.PublishEvent(context.Background(), ev), "republish")
	marker := newEvent(t, "d2")
	testkit.Must(t, pub.PublishEvent(context.Background(), marker), "publish marker")
	waitFor(t, 10*time.Second, "both events handled", func() bool {
		return len(rec.callsFor(marker.ID)) == 1 && allAcked(t, js, cfg.Name)
	})
	if n := len(rec.callsFor(ev.ID)); n != 1 {
		t.Errorf("event republished within the window handled %d times, want 1", n)
	}
	if n := streamMsgs(t, js, events.Stream); n != 2 {
		t.Errorf("stream holds %d messages, want 2", n)
	}

	// The same event arriving again past deduplication (after the window,
	// or from another producer): the consumer hands it over again; the
	// handler's idempotency absorbs it.
	m, err := events.MessageOf(ev)
	testkit.Must(t, err, "message")
	_, err = js.PublishMsg(context.Background(), &nats.Msg{Subject: m.Subject, Data: m.Data})
	testkit.Must(t, err, "publish again without a message id")
	waitFor(t, 10*time.Second, "the repeated event handed over again", func() bool {
		return len(rec.callsFor(ev.ID)) == 2 && allAcked(t, js, cfg.Name)
	})
}

func TestConsumerDeadLettersPoisonAndKeepsFlowing(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	pub := events.NewPublisher(js, testkit.Logger(t))
	rejected := newEvent(t, "rejected")
	rec := &recorder{fail: func(_ int, e events.Envelope) error {
		if e.ID == rejected.ID {
			return events.Permanent(errors.New("document id is not valid"))
		}
		return nil
	}}
	cfg := events.ConsumerConfig{Name: "test-poison", MaxDeliver: 5, Backoff: []time.Duration{time.Minute}}
	start(t, js, cfg, rec.handle)
	ctx := context.Background()

	// Not a CloudEvent; published with a message id as the relay would.
	_, err := js.PublishMsg(ctx, &nats.Msg{Subject: events.DocumentDeleted, Data: []byte("{not json"),
		Header: nats.Header{"traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}},
		jetstream.WithMsgID("garbage-1"))
	testkit.Must(t, err, "publish garbage")
	testkit.Must(t, pub.PublishEvent(ctx, rejected), "publish rejected event")
	after := newEvent(t, "fine")
	testkit.Must(t, pub.PublishEvent(ctx, after), "publish a good event")

	// The backoff is a minute: the poison messages must not wait for it.
	waitFor(t, 5*time.Second, "the good event handled and everything acked or terminated", func() bool {
		return len(rec.callsFor(after.ID)) == 1 && allAcked(t, js, cfg.Name)
	})
	if n := len(rec.callsFor(rejected.ID)); n != 1 {
		t.Errorf("permanently rejected event handled %d times, want 1", n)
	}
	if n := streamMsgs(t, js, events.DLQStream); n != 2 {
		t.Fatalf("dead-letter stream holds %d messages, want 2", n)
	}

	s, _ := js.Stream(ctx, events.DLQStream)
	first, err := s.GetMsg(ctx, 1)
	testkit.Must(t, err, "first dead letter")
	if string(first.Data) != "{not json" || first.Subject != "dlq.test-poison" ||
		!strings.HasPrefix(first.Header.Get(events.HeaderDLQReason), "undecodable CloudEvent") ||
		first.Header.Get(events.HeaderDLQSubject) != events.DocumentDeleted ||
		first.Header.Get(events.HeaderDLQStream) != events.Stream ||
		first.Header.Get(events.HeaderDLQStreamSeq) != "1" ||
		first.Header.Get(events.HeaderDLQEventID) != "garbage-1" ||
		first.Header.Get("traceparent") == "" {
		t.Errorf("dead letter of the undecodable message: subject %s, data %q, headers %v", first.Subject, first.Data, first.Header)
	}
	if got, want := first.Header.Get(jetstream.MsgIDHeader), "test-poison:garbage-1"; got != want {
		t.Errorf("dead letter Nats-Msg-Id = %q, want %q", got, want)
	}

	last := dlqMessage(t, js, cfg.Name)
	if last.Header.Get(events.HeaderDLQEventID) != rejected.ID ||
		!strings.Contains(last.Header.Get(events.HeaderDLQReason), "document id is not valid") ||
		last.Header.Get(events.HeaderDLQStreamSeq) != "2" {
		t.Errorf("dead letter of the rejected event: headers %v", last.Header)
	}
	m, _ := events.MessageOf(rejected)
	if string(last.Data) != string(m.Data) {
		t.Errorf("dead letter data %s, want the original %s", last.Data, m.Data)
	}
	wantMetric(t, "doclib_events_dead_lettered_total", 2, "consumer", cfg.Name)
	wantMetric(t, "doclib_events_applied_total", 1, "consumer", cfg.Name)
}

func TestConsumerDeadLettersAfterMaxDeliver(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	pub := events.NewPublisher(js, testkit.Logger(t))
	rec := &recorder{fail: func(int, events.Envelope) error { return errors.New("search index down") }}
	cfg := events.ConsumerConfig{Name: "test-maxdeliver", MaxDeliver: 3, Backoff: []time.Duration{50 * time.Millisecond}}
	start(t, js, cfg, rec.handle)

	ev := newEvent(t, "d1")
	testkit.Must(t, pub.PublishEvent(context.Background(), ev), "publish")
	waitFor(t, 10*time.Second, "the failing event dead-lettered", func() bool {
		return streamMsgs(t, js, events.DLQStream) == 1 && allAcked(t, js, cfg.Name)
	})
	if n := len(rec.callsFor(ev.ID)); n != 3 {
		t.Errorf("handler called %d times, want MaxDeliver = 3", n)
	}
	m := dlqMessage(t, js, cfg.Name)
	if reason := m.Header.Get(events.HeaderDLQReason); !strings.Contains(reason, "failed 3 deliveries") ||
		!strings.Contains(reason, "search index down") || m.Header.Get(events.HeaderDLQDeliveries) != "3" {
		t.Errorf("dead letter headers %v: want the reason with the delivery count and the last error", m.Header)
	}

	// Whatever follows still flows.
	rec.mu.Lock()
	rec.fail = nil
	rec.mu.Unlock()
	next := newEvent(t, "d2")
	testkit.Must(t, pub.PublishEvent(context.Background(), next), "publish")
	waitFor(t, 10*time.Second, "the next event handled", func() bool { return len(rec.callsFor(next.ID)) == 1 })
}

func TestConsumerConfigValidation(t *testing.T) {
	t.Parallel()
	for _, cfg := range []events.ConsumerConfig{
		{Name: "", Subjects: []string{events.TagDeleted}},
		{Name: "catalog.tag", Subjects: []string{events.TagDeleted}},
		{Name: "catalog-tag-deleted"},
	} {
		if _, err := events.StartConsumer(context.Background(), nil, cfg, nil, testkit.Logger(t)); err == nil {
			t.Errorf("StartConsumer(%+v) succeeded, want an error", cfg)
		}
	}
}

// messageLog records log messages.
type messageLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *messageLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *messageLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *messageLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *messageLog) WithGroup(string) slog.Handler      { return l }
func (l *messageLog) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.msgs, msg)
}

func TestConsumerRetriesAFailedDeadLetterMove(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	ctx := context.Background()
	pub := events.NewPublisher(js, testkit.Logger(t))
	// Dead-letter is unavailable for now.
	testkit.Must(t, js.DeleteStream(ctx, events.DLQStream), "delete the dead-letter stream")

	logs := &messageLog{}
	rec := &recorder{fail: func(int, events.Envelope) error { return errors.New("always failing") }}
	cfg := events.ConsumerConfig{Name: "test-dlq-retry", Subjects: []string{events.DocumentDeleted}, MaxDeliver: 2,
		Backoff: []time.Duration{50 * time.Millisecond, time.Second}}
	c, err := events.StartConsumer(ctx, js, cfg, rec.handle, slog.New(logs))
	testkit.Must(t, err, "start consumer")
	t.Cleanup(func() { stop(t, c) })

	ev := newEvent(t, "d1")
	testkit.Must(t, pub.PublishEvent(ctx, ev), "publish")
	waitFor(t, 10*time.Second, "the failed dead-letter move", func() bool {
		return logs.has("dead-letter failed, message left for redelivery")
	})
	testkit.Must(t, events.EnsureStream(ctx, js), "recreate the dead-letter stream")

	// The message comes back: the handler runs again (it might work by
	// now), fails, and the move succeeds with the last error as reason.
	waitFor(t, 10*time.Second, "the event dead-lettered on a later delivery", func() bool {
		return streamMsgs(t, js, events.DLQStream) == 1 && allAcked(t, js, cfg.Name)
	})
	n := len(rec.callsFor(ev.ID))
	if n < 3 {
		t.Errorf("handler called %d times, want the 2 failing deliveries and at least one after the failed move", n)
	}
	m := dlqMessage(t, js, cfg.Name)
	if m.Header.Get(events.HeaderDLQDeliveries) != strconv.Itoa(n) || !strings.Contains(m.Header.Get(events.HeaderDLQReason), "always failing") {
		t.Errorf("dead letter headers %v: want delivery %d and the last error as reason", m.Header, n)
	}
}

// TestConsumerOutlastsAnOutage: Transient failures (the handler's database
// is down) are retried past MaxDeliver and never dead-letter the event, nor
// count towards it: one ordinary failure right after the outage is retried
// too. The event is applied once the database is back. In batches too.
func TestConsumerOutlastsAnOutage(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	pub := events.NewPublisher(js, testkit.Logger(t))
	var down atomic.Bool
	down.Store(true)
	var mu sync.Mutex
	hiccup := map[string]bool{} // one ordinary failure per event right after the outage
	rec := &recorder{fail: func(_ int, e events.Envelope) error {
		if down.Load() {
			return events.Transient(errors.New("server selection timeout"))
		}
		mu.Lock()
		defer mu.Unlock()
		if !hiccup[e.ID] {
			hiccup[e.ID] = true
			return errors.New("write conflict")
		}
		return nil
	}}
	batches := atomic.Int32{}
	cfg := events.ConsumerConfig{Name: "test-outage", MaxDeliver: 2, Backoff: []time.Duration{20 * time.Millisecond},
		Batch: func(_ context.Context, es []events.Envelope) error {
			batches.Add(1)
			if down.Load() {
				return events.Transient(errors.New("server selection timeout"))
			}
			return nil
		}}
	start(t, js, cfg, rec.handle)

	var evs []events.Event
	for i := range 5 {
		ev := newEvent(t, fmt.Sprint("d", i))
		testkit.Must(t, pub.PublishEvent(context.Background(), ev), "publish")
		evs = append(evs, ev)
	}
	waitFor(t, 10*time.Second, "every event tried well past MaxDeliver", func() bool {
		for _, ev := range evs {
			if len(rec.callsFor(ev.ID)) < 6 {
				return false
			}
		}
		return true
	})
	if n := streamMsgs(t, js, events.DLQStream); n != 0 {
		t.Fatalf("%d events dead-lettered during an outage, want none", n)
	}
	down.Store(false)
	waitFor(t, 10*time.Second, "every event applied once the database is back", func() bool {
		return allAcked(t, js, cfg.Name)
	})
	if n := streamMsgs(t, js, events.DLQStream); n != 0 {
		t.Errorf("%d events dead-lettered, want none", n)
	}
	if n := testkit.Metric(t, "doclib_events_retried_total", "consumer", cfg.Name, "reason", "unavailable"); n < 5 {
		t.Errorf("%v retries counted as unavailable, want at least one per event", n)
	}
	wantMetric(t, "doclib_events_dead_lettered_total", 0, "consumer", cfg.Name)
	wantMetric(t, "doclib_events_applied_total", 5, "consumer", cfg.Name)
}

// TestConsumerBatches: a burst goes to the batch handler in few calls and
// is acked; a batch that fails is applied one event at a time, where a
// Permanent error still dead-letters just its own event.
func TestConsumerBatches(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	pub := events.NewPublisher(js, testkit.Logger(t))
	ctx := context.Background()
	var evs []events.Event
	for i := range 40 {
		evs = append(evs, newEvent(t, "b"+strings.Repeat("x", i+1)))
	}
	// Published before the consumer starts, so they are all waiting.
	for _, ev := range evs {
		testkit.Must(t, pub.PublishEvent(ctx, ev), "publish")
	}
	poison := evs[7].ID
	var mu sync.Mutex
	var batches []int
	seen := map[string]bool{}
	rec := &recorder{fail: func(_ int, e events.Envelope) error {
		if e.ID == poison {
			return events.Permanent(errors.New("bad event"))
		}
		return nil
	}}
	cfg := events.ConsumerConfig{Name: "test-batch", Batch: func(_ context.Context, es []events.Envelope) error {
		mu.Lock()
		batches = append(batches, len(es))
		for _, e := range es {
			seen[e.ID] = true
		}
		mu.Unlock()
		for _, e := range es {
			if e.ID == poison {
				return errors.New("a bad event in the batch")
			}
		}
		return nil
	}}
	start(t, js, cfg, rec.handle)
	waitFor(t, 10*time.Second, "every event acked or dead-lettered", func() bool { return allAcked(t, js, cfg.Name) })

	mu.Lock()
	defer mu.Unlock()
	// A batch of one goes to the single handler (the make test run at
	// 24741de had batches [24 15] for 40 events: the 40th came alone):
	// every event reaches one or the other.
	for _, ev := range evs {
		if !seen[ev.ID] && len(rec.callsFor(ev.ID)) == 0 {
			t.Errorf("event %s reached neither handler", ev.ID)
		}
	}
	if len(batches) == 0 || len(batches) > 10 {
		t.Errorf("batches %v: want a few batches for %d events", batches, len(evs))
	}
	if n := len(rec.callsFor(poison)); n != 1 {
		t.Errorf("the bad event went %d times through the single handler, want 1 (fallback)", n)
	}
	if m := dlqMessage(t, js, cfg.Name); m.Header.Get(events.HeaderDLQEventID) != poison {
		t.Errorf("dead letter is %q, want the bad event %s", m.Header.Get(events.HeaderDLQEventID), poison)
	}
}

// TestConsumerRedeliversWhatADeadProcessHeld (issue 16 item 4): a message
// that a consumer process held when it died comes back to the next one
// within AckWait (3 s), not after a 30 s ack wait.
func TestConsumerRedeliversWhatADeadProcessHeld(t *testing.T) {
	t.Parallel()
	s := testkit.NATS(t)
	connect := func(name string) (*nats.Conn, jetstream.JetStream) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		nc, js, err := events.Connect(ctx, s.ClientURL(), name, testkit.Logger(t))
		testkit.Must(t, err, "connect")
		t.Cleanup(nc.Close)
		testkit.Must(t, events.EnsureStream(ctx, js), "ensure stream")
		return nc, js
	}
	deadConn, deadJS := connect("dies")
	_, js := connect("survives")
	cfg := events.ConsumerConfig{Name: "test-dead-holder", Subjects: []string{events.DocumentDeleted}}

	got := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	_, err := events.StartConsumer(context.Background(), deadJS, cfg, func(context.Context, events.Envelope) error {
		got <- struct{}{}
		<-release // never finishes while its process lives
		return nil
	}, testkit.Logger(t))
	testkit.Must(t, err, "start the consumer that dies")

	ev := newEvent(t, "held")
	testkit.Must(t, events.NewPublisher(js, testkit.Logger(t)).PublishEvent(context.Background(), ev), "publish")
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the first consumer never got the event")
	}
	time.Sleep(2 * time.Second) // it holds the message across progress reports
	deadConn.Close()            // the process dies: no drain, no ack, no nak
	died := time.Now()

	rec := &recorder{}
	start(t, js, cfg, rec.handle)
	waitFor(t, 10*time.Second, "the held event redelivered to the next consumer", func() bool { return len(rec.callsFor(ev.ID)) == 1 })
	if d := rec.callsFor(ev.ID)[0].at.Sub(died); d > 6*time.Second {
		t.Errorf("the event came back %s after its holder died, want within the 3 s ack wait", d.Round(time.Millisecond))
	}
}

// TestConsumerSlowHandlerIsNotRedelivered: a handler that takes several ack
// waits keeps its message (progress reports), so it is not handed out again.
func TestConsumerSlowHandlerIsNotRedelivered(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	rec := &recorder{fail: func(int, events.Envelope) error { time.Sleep(2500 * time.Millisecond); return nil }}
	cfg := events.ConsumerConfig{Name: "test-slow", AckWait: time.Second}
	start(t, js, cfg, rec.handle)
	ev := newEvent(t, "slow")
	testkit.Must(t, events.NewPublisher(js, testkit.Logger(t)).PublishEvent(context.Background(), ev), "publish")
	waitFor(t, 15*time.Second, "the slow event acked", func() bool { return allAcked(t, js, cfg.Name) && len(rec.callsFor(ev.ID)) > 0 })
	if n := len(rec.callsFor(ev.ID)); n != 1 {
		t.Errorf("a handler taking 2.5 ack waits was called %d times, want 1", n)
	}
	if info := consumerInfo(t, js, cfg.Name); info.NumRedelivered != 0 {
		t.Errorf("%d redeliveries of a message in progress, want 0", info.NumRedelivered)
	}
}
