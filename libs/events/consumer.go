package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Headers a dead-lettered message carries besides the original ones (the
// original Nats-* headers are dropped: they are the stream's bookkeeping,
// and Nats-Expected-Stream would make the move fail).
const (
	HeaderDLQReason     = "Dlq-Reason"
	HeaderDLQConsumer   = "Dlq-Consumer"
	HeaderDLQEventID    = "Dlq-Event-Id"
	HeaderDLQSubject    = "Dlq-Original-Subject"
	HeaderDLQStream     = "Dlq-Original-Stream"
	HeaderDLQStreamSeq  = "Dlq-Original-Stream-Seq"
	HeaderDLQDeliveries = "Dlq-Deliveries"
	HeaderDLQTime       = "Dlq-Time"
)

// Handler applies one event. It must be idempotent: an event may be
// delivered more than once. Return nil only once the side effects are
// durable; return an error to have the event redelivered later,
// Permanent(err) when retrying cannot help, or Transient(err) when
// something the handler needs is down (retried as long as it takes).
type Handler func(ctx context.Context, e Envelope) error

// errorClass is how the consumer treats a handler's error.
type errorClass int

const (
	permanent errorClass = iota + 1
	transient
)

type classifiedError struct {
	class errorClass
	err   error
}

func (e classifiedError) Error() string {
	if e.class == permanent {
		return "permanent: " + e.err.Error()
	}
	return "unavailable: " + e.err.Error()
}

func (e classifiedError) Unwrap() error { return e.err }

func classify(err error, c errorClass) error {
	if err == nil {
		return nil
	}
	return classifiedError{class: c, err: err}
}

func classOf(err error) errorClass {
	var c classifiedError
	if errors.As(err, &c) {
		return c.class
	}
	return 0
}

// Permanent marks a handler error as one that no retry can fix (the event
// is invalid for this consumer): the message goes to dead-letter at once.
func Permanent(err error) error { return classify(err, permanent) }

// IsPermanent reports whether err was wrapped by Permanent.
func IsPermanent(err error) bool { return classOf(err) == permanent }

// Transient marks a handler error as an outage of something the handler
// depends on (its database): the event is redelivered with backoff for as
// long as the outage lasts, and such failures never send it to
// dead-letter. An outage longer than MaxDeliver attempts therefore loses
// nothing.
func Transient(err error) error { return classify(err, transient) }

// IsTransient reports whether err was wrapped by Transient.
func IsTransient(err error) bool { return classOf(err) == transient }

// ConsumerConfig configures a durable consumer of the LIBRARY stream. Zero
// values take the defaults.
type ConsumerConfig struct {
	// Name is the durable consumer name, <consumer-svc>-<event>, e.g.
	// "catalog-tag-deleted"; it also names the dead-letter subject.
	Name string
	// Subjects are the subjects the consumer receives.
	Subjects []string
	// MaxDeliver is how many deliveries a message may fail before it is
	// moved to dead-letter (default 8). Transient failures do not count.
	// The count is kept by this process: a restart starts it again, which
	// only allows a failing message more attempts.
	MaxDeliver int
	// Backoff is the redelivery delay after the n-th failed delivery
	// (Backoff[n-1], the last one repeated); default 1s, 2s, 5s, 10s, 30s,
	// 1m. A Nak without a delay would redeliver at once: the consumer
	// BackOff setting only applies to ack timeouts.
	Backoff []time.Duration
	// AckWait is how long the server waits for news of a delivery before
	// it redelivers it (default 3s). While this process holds a message
	// (queued or being handled) it reports progress every AckWait/4
	// (InProgress), so a slow handler is not redelivered; a process that
	// dies reports nothing, and what it held is redelivered, to another
	// replica or to its own restart, within AckWait instead of after a
	// long ack wait.
	AckWait time.Duration
	// HandlerTimeout bounds one call of the handler (default 30s).
	HandlerTimeout time.Duration
	// MaxAckPending bounds the messages in flight (default 256).
	MaxAckPending int
	// Batch, if set, applies several events in one call: the messages
	// already fetched (up to MaxBatch, waiting at most BatchWait for more
	// after the first) go to Batch together and are acked together. If it
	// fails, each message of the batch goes through the one-at-a-time
	// handler instead, so retries, Permanent errors and dead-lettering keep
	// their per-message meaning. A burst of events then costs a few writes,
	// not one per event.
	Batch BatchHandler
	// MaxBatch bounds a batch (default 64); BatchWait is how long to wait
	// for more messages once one arrived (default 2ms).
	MaxBatch  int
	BatchWait time.Duration
}

// BatchHandler applies several events at once; it must be idempotent as a
// Handler is.
type BatchHandler func(ctx context.Context, es []Envelope) error

var defaultBackoff = []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second, time.Minute}

func (c ConsumerConfig) withDefaults() ConsumerConfig {
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 8
	}
	if len(c.Backoff) == 0 {
		c.Backoff = defaultBackoff
	}
	if c.AckWait <= 0 {
		c.AckWait = 3 * time.Second
	}
	if c.HandlerTimeout <= 0 {
		c.HandlerTimeout = 30 * time.Second
	}
	if c.MaxAckPending <= 0 {
		c.MaxAckPending = 256
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 64
	}
	if c.BatchWait <= 0 {
		c.BatchWait = 2 * time.Millisecond
	}
	return c
}

func (c ConsumerConfig) validate() error {
	if c.Name == "" || strings.ContainsAny(c.Name, ".*> \t") {
		return fmt.Errorf("consumer name %q: want a non-empty name without '.', '*', '>' or spaces", c.Name)
	}
	if len(c.Subjects) == 0 {
		return fmt.Errorf("consumer %s: no subjects", c.Name)
	}
	return nil
}

// Consumer runs a handler over a durable pull consumer of the LIBRARY
// stream, one message at a time, or in batches when the configuration has
// a batch handler.
type Consumer struct {
	cfg     ConsumerConfig
	js      jetstream.JetStream
	handler Handler
	log     *slog.Logger
	tracer  trace.Tracer
	cc      jetstream.ConsumeContext

	// The consume callback queues messages here at once (so every message
	// this process holds is known and reported in progress), and one
	// worker takes them, one by one or in batches.
	inbox  chan jetstream.Msg
	worker chan struct{} // closed when the worker has stopped
	// closeInbox: Stop may be called more than once.
	closeInbox sync.Once

	heldMu   sync.Mutex
	held     map[jetstream.Msg]struct{} // queued or being handled
	beat     chan struct{}              // closed to stop the progress reports
	beatWG   sync.WaitGroup
	stopBeat sync.Once

	mu     sync.Mutex
	failed map[uint64]int // stream sequence -> failed deliveries, Transient ones not counted
}

// maxTracked bounds failed: entries go when their message is acked or
// dead-lettered here, but one acked by another replica would stay.
const maxTracked = 10_000

// fail counts a failed delivery of the message at seq and returns the count.
func (c *Consumer) fail(seq uint64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed == nil || len(c.failed) >= maxTracked {
		c.failed = map[uint64]int{} // forgetting only allows more attempts
	}
	c.failed[seq]++
	return c.failed[seq]
}

// forget drops the count of a message that is done with.
func (c *Consumer) forget(seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.failed, seq)
}

// StartConsumer creates or updates the durable consumer cfg.Name and starts
// handing its messages to h. Stop it with Stop.
//
// The consumer acks explicitly, after the handler returned nil. A failed
// delivery is redelivered after cfg.Backoff. A message is moved to the
// dead-letter subject dlq.<name> and terminated when it does not decode as
// a CloudEvent, when the handler returns Permanent(err), or when it has
// failed cfg.MaxDeliver deliveries not counting Transient ones; a poison
// message therefore never holds up the others. The server redelivers
// without limit: a message whose move to dead-letter failed comes back and
// is tried again (the handler too), and a Transient outage lasts as long
// as it lasts. (A message that kills the process, not a recovered panic,
// would therefore come back after every restart.)
func StartConsumer(ctx context.Context, js jetstream.JetStream, cfg ConsumerConfig, h Handler, log *slog.Logger, opts ...Option) (*Consumer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	o := applyOptions(opts)
	c := &Consumer{cfg: cfg, js: js, handler: h, tracer: o.tp.Tracer(instrumentation),
		log: log.With("consumer", cfg.Name)}

	cons, err := js.CreateOrUpdateConsumer(ctx, Stream, jetstream.ConsumerConfig{
		Durable:        cfg.Name,
		Description:    "doclib consumer " + cfg.Name,
		FilterSubjects: cfg.Subjects,
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        cfg.AckWait,
		MaxDeliver:     -1, // the consumer decides when to give up (handle)
		MaxAckPending:  cfg.MaxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cfg.Name, err)
	}
	// Room for every message the server may have out (MaxAckPending) and
	// the client's pull buffer: the callback never waits.
	c.inbox = make(chan jetstream.Msg, cfg.MaxAckPending+pullMax)
	c.worker = make(chan struct{})
	c.held = map[jetstream.Msg]struct{}{}
	c.beat = make(chan struct{})
	deliver := func(msg jetstream.Msg) {
		c.hold(msg)
		c.inbox <- msg
	}
	if cfg.Batch != nil {
		go c.batches()
	} else {
		go c.oneByOne()
	}
	c.beatWG.Add(1)
	go c.reportProgress()
	c.cc, err = cons.Consume(deliver,
		// A small buffer: Drain processes what is buffered before stopping.
		jetstream.PullMaxMessages(pullMax),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			c.log.Warn("consume error", "error", err)
		}),
	)
	if err != nil {
		c.closeInbox.Do(func() { close(c.inbox) })
		c.stopProgress()
		return nil, fmt.Errorf("consumer %s: consume: %w", cfg.Name, err)
	}
	consumerMetrics(cfg.Name)
	c.log.Info("consumer started", "subjects", cfg.Subjects, "maxDeliver", cfg.MaxDeliver)
	return c, nil
}

// Stop stops fetching, lets the messages already fetched be handled and
// waits until that is done or ctx ends.
func (c *Consumer) Stop(ctx context.Context) error {
	// Without progress reports, whatever is left when ctx ends goes back
	// to the server within AckWait.
	defer c.stopProgress()
	c.cc.Drain()
	select {
	case <-c.cc.Closed():
	case <-ctx.Done():
		c.cc.Stop()
		return fmt.Errorf("consumer %s: drain: %w", c.cfg.Name, ctx.Err())
	}
	c.closeInbox.Do(func() { close(c.inbox) }) // the callback is not called after Closed
	select {
	case <-c.worker:
	case <-ctx.Done():
		return fmt.Errorf("consumer %s: drain: %w", c.cfg.Name, ctx.Err())
	}
	c.log.Info("consumer stopped")
	return nil
}

// pullMax is the client's pull buffer: a small one, since Drain handles
// what is buffered before stopping.
const pullMax = 64

func (c *Consumer) hold(msg jetstream.Msg) {
	c.heldMu.Lock()
	c.held[msg] = struct{}{}
	c.heldMu.Unlock()
}

func (c *Consumer) release(msgs ...jetstream.Msg) {
	c.heldMu.Lock()
	for _, m := range msgs {
		delete(c.held, m)
	}
	c.heldMu.Unlock()
}

// reportProgress tells the server, every AckWait/4, that each message this
// process holds is still being worked on, until stopProgress.
func (c *Consumer) reportProgress() {
	defer c.beatWG.Done()
	tick := time.NewTicker(c.cfg.AckWait / 4)
	defer tick.Stop()
	for {
		select {
		case <-c.beat:
			return
		case <-tick.C:
		}
		c.heldMu.Lock()
		msgs := make([]jetstream.Msg, 0, len(c.held))
		for m := range c.held {
			msgs = append(msgs, m)
		}
		c.heldMu.Unlock()
		for _, m := range msgs {
			if err := m.InProgress(); err != nil {
				c.log.Debug("progress report failed; the message may be redelivered", "error", err)
			}
		}
	}
}

func (c *Consumer) stopProgress() {
	c.stopBeat.Do(func() { close(c.beat) })
	c.beatWG.Wait()
}

// oneByOne handles queued messages one at a time until the inbox is closed.
func (c *Consumer) oneByOne() {
	defer close(c.worker)
	for msg := range c.inbox {
		c.handle(msg)
		c.release(msg)
	}
}

// batches takes queued messages in batches until the inbox is closed.
func (c *Consumer) batches() {
	defer close(c.worker)
	for first := range c.inbox {
		batch := []jetstream.Msg{first}
		wait := time.NewTimer(c.cfg.BatchWait)
	gather:
		for len(batch) < c.cfg.MaxBatch {
			select {
			case msg, ok := <-c.inbox:
				if !ok {
					break gather
				}
				batch = append(batch, msg)
			case <-wait.C:
				break gather
			}
		}
		wait.Stop()
		c.applyBatch(batch)
		c.release(batch...)
	}
}

// applyBatch hands the well-formed first deliveries of batch to the batch
// handler and acks them; anything else, or a failed batch, goes through
// handle one message at a time.
func (c *Consumer) applyBatch(batch []jetstream.Msg) {
	var envs []Envelope
	var msgs []jetstream.Msg
	for _, msg := range batch {
		var env Envelope
		md, err := msg.Metadata()
		if err != nil || md.NumDelivered > 1 || json.Unmarshal(msg.Data(), &env) != nil || env.ID == "" || env.Type == "" {
			c.handle(msg) // redeliveries and poison keep their per-message path
			continue
		}
		env.Sequence = md.Sequence.Stream
		envs, msgs = append(envs, env), append(msgs, msg)
	}
	if len(msgs) == 0 {
		return
	}
	if len(msgs) == 1 {
		c.handle(msgs[0])
		return
	}
	links := make([]trace.Link, len(msgs))
	for i, msg := range msgs {
		mctx := otel.GetTextMapPropagator().Extract(context.Background(), HeaderCarrier(msg.Headers()))
		links[i] = trace.Link{SpanContext: trace.SpanContextFromContext(mctx)}
	}
	ctx, span := c.tracer.Start(context.Background(), "process batch "+c.cfg.Name,
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithLinks(links...),
		trace.WithAttributes(messagingSystem, semconv.MessagingOperationTypeProcess,
			semconv.MessagingConsumerGroupName(c.cfg.Name), semconv.MessagingBatchMessageCount(len(msgs))))
	defer span.End()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HandlerTimeout)
	defer cancel()
	if err := c.applyAll(ctx, envs); err != nil {
		span.RecordError(err)
		if IsTransient(err) {
			// One by one would fail the same way, each after its timeout.
			delay := c.backoff(1)
			c.log.WarnContext(ctx, "batch failed, a dependency is unavailable; retried", "events", len(msgs), "error", err, "retryIn", delay)
			for _, msg := range msgs {
				_ = msg.NakWithDelay(delay)
			}
			retriedTotal.WithLabelValues(c.cfg.Name, retryUnavailable).Add(float64(len(msgs)))
			return
		}
		c.log.WarnContext(ctx, "batch failed; applying its events one by one", "events", len(msgs), "error", err)
		for _, msg := range msgs {
			c.handle(msg)
		}
		return
	}
	for i, msg := range msgs {
		log := c.log.With("eventId", envs[i].ID, "subject", msg.Subject(), "delivery", 1, "batch", len(msgs))
		if err := msg.Ack(); err != nil {
			log.WarnContext(ctx, "event applied, ack failed", "error", err)
			continue
		}
		appliedTotal.WithLabelValues(c.cfg.Name).Inc()
		log.InfoContext(ctx, "event applied")
	}
}

// applyAll runs the batch handler; a panic counts as a failed batch.
func (c *Consumer) applyAll(ctx context.Context, envs []Envelope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("batch handler panic: %v", r)
		}
	}()
	return c.cfg.Batch(ctx, envs)
}

// handle runs on the consume goroutine for each message.
func (c *Consumer) handle(msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		// Not a JetStream delivery: cannot be acked or redelivered.
		c.log.Error("message without JetStream metadata", "subject", msg.Subject(), "error", err)
		return
	}
	ctx := otel.GetTextMapPropagator().Extract(context.Background(), HeaderCarrier(msg.Headers()))
	ctx, span := c.tracer.Start(ctx, "process "+msg.Subject(),
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			messagingSystem,
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingOperationName("process"),
			semconv.MessagingDestinationName(msg.Subject()),
			semconv.MessagingConsumerGroupName(c.cfg.Name),
			semconv.MessagingMessageBodySize(len(msg.Data())),
			attribute.Int64("messaging.nats.stream_sequence", int64(md.Sequence.Stream)),
			attribute.Int64("messaging.nats.delivery_count", int64(md.NumDelivered)),
		))
	defer span.End()
	// The deadline keeps a stuck handler from holding its message forever.
	ctx, cancel := context.WithTimeout(ctx, c.cfg.HandlerTimeout)
	defer cancel()

	var env Envelope
	if err := json.Unmarshal(msg.Data(), &env); err != nil || env.ID == "" || env.Type == "" {
		reason := "undecodable CloudEvent: missing id or type"
		if err != nil {
			reason = "undecodable CloudEvent: " + err.Error()
		}
		span.SetStatus(codes.Error, "poison message")
		c.deadLetter(ctx, msg, md, msg.Headers().Get(jetstream.MsgIDHeader), reason)
		return
	}
	env.Sequence = md.Sequence.Stream
	span.SetAttributes(semconv.MessagingMessageID(env.ID))
	log := c.log.With("eventId", env.ID, "subject", msg.Subject(), "delivery", md.NumDelivered)

	seq := md.Sequence.Stream
	err = c.apply(ctx, env)
	var failures int
	if err != nil && !IsTransient(err) && !IsPermanent(err) {
		failures = c.fail(seq)
	}
	switch {
	case err == nil:
		c.forget(seq)
		if aerr := msg.Ack(); aerr != nil {
			// The event is applied; it will be redelivered and applied
			// again, which an idempotent handler absorbs.
			log.WarnContext(ctx, "event applied, ack failed", "error", aerr)
			return
		}
		appliedTotal.WithLabelValues(c.cfg.Name).Inc()
		log.InfoContext(ctx, "event applied")
	case IsPermanent(err):
		span.RecordError(err)
		span.SetStatus(codes.Error, "permanent failure")
		if c.deadLetter(ctx, msg, md, env.ID, err.Error()) {
			c.forget(seq)
		}
	case failures >= c.cfg.MaxDeliver:
		span.RecordError(err)
		span.SetStatus(codes.Error, "max deliveries reached")
		if c.deadLetter(ctx, msg, md, env.ID, fmt.Sprintf("failed %d deliveries, last error: %v", failures, err)) {
			c.forget(seq)
		}
	default:
		span.RecordError(err)
		span.SetStatus(codes.Error, "will retry")
		delay := c.backoff(md.NumDelivered)
		what, reason := "event failed, will retry", retryFailed
		if IsTransient(err) {
			what, reason = "event failed, a dependency is unavailable; retried until it is back", retryUnavailable
		}
		log.WarnContext(ctx, what, "error", err, "retryIn", delay)
		retriedTotal.WithLabelValues(c.cfg.Name, reason).Inc()
		if nerr := msg.NakWithDelay(delay); nerr != nil {
			log.WarnContext(ctx, "nak failed; redelivery after the ack wait", "error", nerr)
		}
	}
}

// apply runs the handler; a panic counts as a failed delivery instead of
// killing the process.
func (c *Consumer) apply(ctx context.Context, env Envelope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v", r)
		}
	}()
	return c.handler(ctx, env)
}

func (c *Consumer) backoff(delivered uint64) time.Duration {
	i := int(delivered) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(c.cfg.Backoff) {
		i = len(c.cfg.Backoff) - 1
	}
	return c.cfg.Backoff[i]
}

// deadLetter copies msg to dlq.<consumer> and terminates it, and reports
// whether the copy was stored. The copy's message id derives from the
// consumer and the event id, so a repeated move (the Term got lost and the
// message came back) is deduplicated. When the copy cannot be stored, the
// message is left for redelivery instead.
func (c *Consumer) deadLetter(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, eventID, reason string) bool {
	reason = headerValue(reason)
	if eventID == "" {
		eventID = "seq-" + strconv.FormatUint(md.Sequence.Stream, 10)
	}
	log := c.log.With("eventId", eventID, "subject", msg.Subject(), "delivery", md.NumDelivered)

	h := nats.Header{}
	for k, v := range msg.Headers() {
		if strings.HasPrefix(strings.ToLower(k), "nats-") {
			continue
		}
		h[k] = append([]string(nil), v...)
	}
	h.Set(HeaderDLQReason, reason)
	h.Set(HeaderDLQConsumer, c.cfg.Name)
	h.Set(HeaderDLQEventID, eventID)
	h.Set(HeaderDLQSubject, msg.Subject())
	h.Set(HeaderDLQStream, md.Stream)
	h.Set(HeaderDLQStreamSeq, strconv.FormatUint(md.Sequence.Stream, 10))
	h.Set(HeaderDLQDeliveries, strconv.FormatUint(md.NumDelivered, 10))
	h.Set(HeaderDLQTime, time.Now().UTC().Format(time.RFC3339Nano))
	dlq := &nats.Msg{Subject: DLQSubjectPrefix + c.cfg.Name, Data: msg.Data(), Header: h}

	// The handler may have used up the delivery's deadline; the move gets
	// its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := c.js.PublishMsg(ctx, dlq, jetstream.WithMsgID(c.cfg.Name+":"+eventID), jetstream.WithExpectStream(DLQStream)); err != nil {
		delay := c.backoff(md.NumDelivered)
		log.ErrorContext(ctx, "dead-letter failed, message left for redelivery", "reason", reason, "error", err,
			"streamSeq", md.Sequence.Stream, "retryIn", delay)
		_ = msg.NakWithDelay(delay)
		return false
	}
	deadLetteredTotal.WithLabelValues(c.cfg.Name).Inc()
	if err := msg.TermWithReason("dead-lettered: " + reason); err != nil {
		log.WarnContext(ctx, "dead-lettered, term failed", "error", err)
	}
	log.ErrorContext(ctx, "event dead-lettered", "reason", reason, "dlqSubject", dlq.Subject, "streamSeq", md.Sequence.Stream)
	return true
}

// headerValue makes s safe as a header value: one line, bounded.
func headerValue(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
	const maxLen = 512
	if len(s) > maxLen {
		s = s[:maxLen]
	}
	return s
}
