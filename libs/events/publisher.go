package events

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Header names and values set on every published event.
const (
	HeaderContentType = "Content-Type"
	ContentType       = "application/cloudevents+json"
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

const instrumentation = "github.com/doclib/libs/events"

var messagingSystem = semconv.MessagingSystemKey.String("nats")

// Message is one event as it goes on the wire, usually read back from an
// outbox entry: the envelope was serialised when the change was written,
// and the trace context is the one of the request that caused it.
type Message struct {
	ID          string // the event id, sent as Nats-Msg-Id
	Subject     string
	Data        []byte // the CloudEvents JSON envelope, published as is
	TraceParent string
	TraceState  string
}

// MessageOf serialises ev for publishing.
func MessageOf(ev Event) (Message, error) {
	data, err := json.Marshal(ev.Envelope)
	if err != nil {
		return Message{}, fmt.Errorf("event %s: %w", ev.ID, err)
	}
	return Message{ID: ev.ID, Subject: ev.Type, Data: data, TraceParent: ev.TraceParent, TraceState: ev.TraceState}, nil
}

// Option configures a Publisher or a Consumer.
type Option func(*options)

type options struct {
	tp trace.TracerProvider
}

// WithTracerProvider makes spans with tp instead of the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tp = tp }
}

func applyOptions(opts []Option) options {
	o := options{tp: otel.GetTracerProvider()}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Publisher publishes events to the LIBRARY stream.
type Publisher struct {
	js     jetstream.JetStream
	log    *slog.Logger
	tracer trace.Tracer
}

// NewPublisher returns a Publisher on js.
func NewPublisher(js jetstream.JetStream, log *slog.Logger, opts ...Option) *Publisher {
	o := applyOptions(opts)
	return &Publisher{js: js, log: log, tracer: o.tp.Tracer(instrumentation)}
}

// Publish sends m and waits for the stream's acknowledgement. The event id
// is the Nats-Msg-Id, so a republish within the duplicate window is
// dropped by the stream; that answer (a duplicate PubAck) is a success,
// because the event is in the stream. The message must land in LIBRARY:
// a subject no stream captures, or one captured by another stream, fails.
//
// Without a deadline on ctx, JetStream's default timeout (5s) applies.
// While the connection is reconnecting, the request is buffered and fails
// at the timeout; the buffered copy may still reach the stream after the
// reconnect, which the duplicate window absorbs.
func (p *Publisher) Publish(ctx context.Context, m Message) error {
	// The producer span belongs to the relay's own work (ctx), which may
	// run long after the request that caused the event; it is linked to
	// that request's trace. The headers carry the request's context itself,
	// so the consumers continue the request's trace.
	stored := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{
		HeaderTraceParent: m.TraceParent, HeaderTraceState: m.TraceState,
	})
	startOpts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			messagingSystem,
			semconv.MessagingOperationTypeSend,
			semconv.MessagingOperationName("publish"),
			semconv.MessagingDestinationName(m.Subject),
			semconv.MessagingMessageID(m.ID),
			semconv.MessagingMessageBodySize(len(m.Data)),
		),
	}
	if sc := trace.SpanContextFromContext(stored); sc.IsValid() {
		startOpts = append(startOpts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	ctx, span := p.tracer.Start(ctx, "publish "+m.Subject, startOpts...)
	defer span.End()

	msg := &nats.Msg{Subject: m.Subject, Data: m.Data, Header: nats.Header{}}
	msg.Header.Set(HeaderContentType, ContentType)
	if m.TraceParent != "" {
		HeaderCarrier(msg.Header).Set(HeaderTraceParent, m.TraceParent)
	}
	if m.TraceState != "" {
		HeaderCarrier(msg.Header).Set(HeaderTraceState, m.TraceState)
	}
	ack, err := p.js.PublishMsg(ctx, msg, jetstream.WithMsgID(m.ID), jetstream.WithExpectStream(Stream))
	if err != nil {
		publishErrorsTotal.WithLabelValues(m.Subject).Inc()
		span.RecordError(err)
		span.SetStatus(codes.Error, "publish failed")
		return fmt.Errorf("publish event %s on %s: %w", m.ID, m.Subject, err)
	}
	span.SetAttributes(attribute.Int64("messaging.nats.stream_sequence", int64(ack.Sequence)),
		attribute.Bool("messaging.nats.duplicate", ack.Duplicate))
	if !ack.Duplicate {
		publishedTotal.WithLabelValues(m.Subject).Inc()
	}
	p.log.InfoContext(ctx, "event published", "eventId", m.ID, "subject", m.Subject,
		"streamSeq", ack.Sequence, "duplicate", ack.Duplicate)
	return nil
}

// PublishEvent publishes ev directly, without an outbox; for tools and
// tests. Services publish through the outbox so that the change and the
// event cannot diverge.
func (p *Publisher) PublishEvent(ctx context.Context, ev Event) error {
	m, err := MessageOf(ev)
	if err != nil {
		return err
	}
	return p.Publish(ctx, m)
}
