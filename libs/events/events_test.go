package events_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
)

func TestMain(m *testing.M) {
	// Services install it in telemetry.Setup; events.New and the consumer
	// use the global propagator.
	otel.SetTextMapPropagator(propagation.TraceContext{})
	testkit.Main(m)
}

// startJetStream starts a fresh NATS server, connects to it and creates the
// streams.
func startJetStream(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	s := testkit.NATS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, err := events.Connect(ctx, s.ClientURL(), "events-test", testkit.Logger(t))
	testkit.Must(t, err, "connect")
	t.Cleanup(nc.Close)
	testkit.Must(t, events.EnsureStream(ctx, js), "ensure stream")
	return nc, js
}

// waitFor polls cond until it holds or the deadline passes.
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

func streamMsgs(t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	testkit.Must(t, err, "stream "+name)
	info, err := s.Info(context.Background())
	testkit.Must(t, err, "stream info "+name)
	return info.State.Msgs
}

func TestEnvelopeRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 890, time.FixedZone("x", 3600))
	ev, err := events.New(context.Background(), "/taxonomy", events.TagDeleted,
		events.TagDeletedData{TagID: "t1", CategoryID: "c1"}, at)
	testkit.Must(t, err, "new event")
	if len(ev.ID) != 32 {
		t.Errorf("id %q: want 32 hex characters", ev.ID)
	}
	m, err := events.MessageOf(ev)
	testkit.Must(t, err, "message")
	if m.ID != ev.ID || m.Subject != events.TagDeleted {
		t.Errorf("message id/subject = %q/%q, want %q/%q", m.ID, m.Subject, ev.ID, events.TagDeleted)
	}

	var raw map[string]any
	testkit.Must(t, json.Unmarshal(m.Data, &raw), "decode as map")
	for _, k := range []string{"specversion", "id", "source", "type", "time", "datacontenttype", "data"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("CloudEvents attribute %q missing in %s", k, m.Data)
		}
	}

	var got events.Envelope
	testkit.Must(t, json.Unmarshal(m.Data, &got), "decode envelope")
	if got.SpecVersion != "1.0" || got.ID != ev.ID || got.Source != "/taxonomy" || got.Type != events.TagDeleted ||
		got.DataContentType != "application/json" || !got.Time.Equal(at) {
		t.Errorf("round trip: got %+v, want %+v", got, ev.Envelope)
	}
	var data events.TagDeletedData
	testkit.Must(t, json.Unmarshal(got.Data, &data), "decode data")
	if data != (events.TagDeletedData{TagID: "t1", CategoryID: "c1"}) {
		t.Errorf("data = %+v", data)
	}
}

func TestHeaderCarrierKeepsLowerCaseKeys(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	defer span.End()

	h := nats.Header{}
	propagation.TraceContext{}.Inject(ctx, events.HeaderCarrier(h))
	if _, ok := h["traceparent"]; !ok {
		t.Fatalf("headers %v: want the key traceparent in lower case", h)
	}
	if _, ok := h["Traceparent"]; ok {
		t.Errorf("headers %v: canonicalised key Traceparent present", h)
	}
	if keys := events.HeaderCarrier(h).Keys(); len(keys) != 1 || keys[0] != "traceparent" {
		t.Errorf("Keys() = %v, want [traceparent]", keys)
	}
	got := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), events.HeaderCarrier(h)))
	if got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("extracted %v, want %v", got, span.SpanContext())
	}

	// A producer that canonicalised the key is still understood.
	canon := nats.Header{"Traceparent": h["traceparent"]}
	if v := events.HeaderCarrier(canon).Get("traceparent"); v != h.Get("traceparent") {
		t.Errorf("Get on canonicalised header = %q, want %q", v, h.Get("traceparent"))
	}
}

func TestEnsureStreamIsIdempotent(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t) // once
	ctx := context.Background()
	testkit.Must(t, events.EnsureStream(ctx, js), "second EnsureStream")

	for _, tc := range []struct {
		name    string
		subject string
		maxAge  time.Duration
	}{
		{events.Stream, "library.>", 14 * 24 * time.Hour},
		{events.DLQStream, "dlq.>", 30 * 24 * time.Hour},
	} {
		s, err := js.Stream(ctx, tc.name)
		testkit.Must(t, err, "stream "+tc.name)
		info, err := s.Info(ctx)
		testkit.Must(t, err, "info")
		c := info.Config
		if len(c.Subjects) != 1 || c.Subjects[0] != tc.subject || c.Retention != jetstream.LimitsPolicy ||
			c.MaxAge != tc.maxAge || c.Duplicates != time.Hour || c.Storage != jetstream.FileStorage {
			t.Errorf("stream %s config: subjects %v retention %v maxAge %v duplicates %v storage %v; "+
				"want [%s] limits %v 1h file", tc.name, c.Subjects, c.Retention, c.MaxAge, c.Duplicates, c.Storage,
				tc.subject, tc.maxAge)
		}
	}
}

func TestPublishSetsHeadersAndDeduplicates(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	ctx := context.Background()
	pub := events.NewPublisher(js, testkit.Logger(t))
	ev, err := events.New(ctx, "/media", events.MediaDeleted, events.MediaDeletedData{MediaID: "m1"}, time.Now())
	testkit.Must(t, err, "new")
	testkit.Must(t, pub.PublishEvent(ctx, ev), "publish")
	testkit.Must(t, pub.PublishEvent(ctx, ev), "republish (a duplicate is a success)")

	if n := streamMsgs(t, js, events.Stream); n != 1 {
		t.Fatalf("stream holds %d messages after publishing one event twice, want 1", n)
	}
	// The only test publishing this subject: the duplicate is not counted.
	if n := testkit.Metric(t, "doclib_events_published_total", "subject", events.MediaDeleted); n != 1 {
		t.Errorf("doclib_events_published_total{subject=%s} = %v, want 1", events.MediaDeleted, n)
	}
	s, _ := js.Stream(ctx, events.Stream)
	msg, err := s.GetLastMsgForSubject(ctx, events.MediaDeleted)
	testkit.Must(t, err, "get message")
	if got := msg.Header.Get(jetstream.MsgIDHeader); got != ev.ID {
		t.Errorf("Nats-Msg-Id = %q, want the event id %q", got, ev.ID)
	}
	if got := msg.Header.Get("Content-Type"); got != "application/cloudevents+json" {
		t.Errorf("Content-Type = %q", got)
	}
}

func TestTraceContextSurvivesPublishAndConsume(t *testing.T) {
	t.Parallel()
	_, js := startJetStream(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	log := testkit.Logger(t)

	reqCtx, reqSpan := tp.Tracer("test").Start(context.Background(), "DELETE /tags/{id}")
	ev, err := events.New(reqCtx, "/taxonomy", events.TagDeleted, events.TagDeletedData{TagID: "t1", CategoryID: "c1"}, time.Now())
	reqSpan.End()
	testkit.Must(t, err, "new")
	if ev.TraceParent == "" {
		t.Fatal("events.New captured no traceparent")
	}

	// The relay publishes later, outside the request.
	pub := events.NewPublisher(js, log, events.WithTracerProvider(tp))
	testkit.Must(t, pub.PublishEvent(context.Background(), ev), "publish")

	s, _ := js.Stream(context.Background(), events.Stream)
	raw, err := s.GetLastMsgForSubject(context.Background(), events.TagDeleted)
	testkit.Must(t, err, "get message")
	if got := raw.Header["traceparent"]; len(got) != 1 || got[0] != ev.TraceParent {
		t.Errorf("header traceparent (lower-case key) = %v, want [%s]; headers %v", got, ev.TraceParent, raw.Header)
	}

	seen := make(chan trace.SpanContext, 1)
	c, err := events.StartConsumer(context.Background(), js, events.ConsumerConfig{
		Name: "test-trace", Subjects: []string{events.TagDeleted},
	}, func(ctx context.Context, e events.Envelope) error {
		seen <- trace.SpanContextFromContext(ctx)
		return nil
	}, log, events.WithTracerProvider(tp))
	testkit.Must(t, err, "start consumer")
	defer stop(t, c)

	var handlerSC trace.SpanContext
	select {
	case handlerSC = <-seen:
	case <-time.After(10 * time.Second):
		t.Fatal("handler not called")
	}
	if handlerSC.TraceID() != reqSpan.SpanContext().TraceID() {
		t.Errorf("handler trace id %v, want the request's %v", handlerSC.TraceID(), reqSpan.SpanContext().TraceID())
	}

	// request -> create (in the request) -> process (in the consumer); the
	// relay's publish, in its own trace, links to the create span.
	var create, producer, consumer sdktrace.ReadOnlySpan
	waitFor(t, 5*time.Second, "create, publish and process spans", func() bool {
		for _, s := range rec.Ended() {
			switch {
			case s.Name() == "create "+events.TagDeleted:
				create = s
			case s.SpanKind() == trace.SpanKindProducer:
				producer = s
			case s.SpanKind() == trace.SpanKindConsumer:
				consumer = s
			}
		}
		return create != nil && producer != nil && consumer != nil
	})
	if create.SpanKind() != trace.SpanKindProducer || create.Parent().SpanID() != reqSpan.SpanContext().SpanID() {
		t.Errorf("create span of kind %v under %v, want a producer span under the request span %v",
			create.SpanKind(), create.Parent().SpanID(), reqSpan.SpanContext().SpanID())
	}
	if consumer.Name() != "process "+events.TagDeleted || consumer.Parent().SpanID() != create.SpanContext().SpanID() {
		t.Errorf("consumer span %q with parent %v, want %q under the create span %v",
			consumer.Name(), consumer.Parent().SpanID(), "process "+events.TagDeleted, create.SpanContext().SpanID())
	}
	if l := producer.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != create.SpanContext().SpanID() {
		t.Errorf("publish span links %v, want one link to the create span", l)
	}
	attrs := map[string]string{}
	for _, a := range producer.Attributes() {
		attrs[string(a.Key)] = a.Value.Emit()
	}
	if attrs["messaging.system"] != "nats" || attrs["messaging.destination.name"] != events.TagDeleted ||
		attrs["messaging.message.id"] != ev.ID {
		t.Errorf("producer attributes %v", attrs)
	}
}

func stop(t *testing.T, c *events.Consumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("stop consumer: %v", err)
	}
}
