package delivery

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/doclib/services/webhook/internal/subscription"
)

// Config configures the dispatcher.
type Config struct {
	Retry Retry
	// Owner names this process in the queues' leases.
	Owner string
	// Poll is how often idle workers look at their queue and the
	// dispatcher at the subscriptions (new events nudge at once).
	Poll time.Duration
	// Lease is how long a worker holds its queue without renewing; a
	// process that dies leaves it to another replica (or its own restart)
	// after that. It is renewed when less than half is left, so it must be
	// more than twice an attempt's Timeout: a lease never lapses during an
	// attempt, and two processes never send one queue at once.
	Lease time.Duration
}

// Dispatcher runs one worker per active subscription whose queue lease
// this process holds: the one place that sends a subscription's
// deliveries, in order.
type Dispatcher struct {
	store  Store
	subs   Subscriptions
	sender *Sender
	cfg    Config
	log    *slog.Logger
	tracer trace.Tracer

	mu      sync.Mutex
	workers map[string]*worker
	wg      sync.WaitGroup
}

type worker struct {
	nudge  chan struct{}
	cancel context.CancelFunc
}

// NewDispatcher returns a dispatcher; Run starts it.
func NewDispatcher(store Store, subs Subscriptions, sender *Sender, cfg Config, log *slog.Logger) *Dispatcher {
	return &Dispatcher{store: store, subs: subs, sender: sender, cfg: cfg, log: log,
		tracer: otel.Tracer("github.com/doclib/services/webhook/internal/delivery"), workers: map[string]*worker{}}
}

// Run starts and stops workers as subscriptions come and go, until ctx
// ends; then it waits for the workers (an attempt under way finishes).
func (d *Dispatcher) Run(ctx context.Context) {
	tick := time.NewTicker(d.cfg.Poll)
	defer tick.Stop()
	for {
		d.reconcile(ctx)
		select {
		case <-ctx.Done():
			d.mu.Lock()
			for _, w := range d.workers {
				w.cancel()
			}
			d.mu.Unlock()
			d.wg.Wait()
			return
		case <-tick.C:
		}
	}
}

// Nudge tells the workers of subs that their queue has news.
func (d *Dispatcher) Nudge(subs ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range subs {
		if w := d.workers[s]; w != nil {
			select {
			case w.nudge <- struct{}{}:
			default:
			}
		}
	}
}

func (d *Dispatcher) reconcile(ctx context.Context) {
	subs, err := d.subs.List(ctx)
	if err != nil {
		if ctx.Err() == nil {
			d.log.WarnContext(ctx, "cannot list webhook subscriptions; retrying", "error", err)
		}
		return
	}
	active := map[string]bool{}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range subs {
		if s.Status != subscription.Active {
			continue
		}
		active[s.ID] = true
		if d.workers[s.ID] == nil && ctx.Err() == nil {
			wctx, cancel := context.WithCancel(ctx)
			w := &worker{nudge: make(chan struct{}, 1), cancel: cancel}
			d.workers[s.ID] = w
			d.wg.Add(1)
			go d.work(wctx, s.ID, w)
		}
	}
	for id, w := range d.workers {
		if !active[id] {
			w.cancel()
		}
	}
}

// work sends sub's deliveries while this process holds its lease.
func (d *Dispatcher) work(ctx context.Context, sub string, w *worker) {
	defer d.wg.Done()
	defer func() {
		d.mu.Lock()
		if d.workers[sub] == w {
			delete(d.workers, sub)
		}
		d.mu.Unlock()
		forget(sub)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = d.store.Release(rctx, sub, d.cfg.Owner)
	}()
	var held time.Time // the lease is ours until then
	var counted time.Time
	for ctx.Err() == nil {
		now := time.Now()
		if now.After(held.Add(-d.cfg.Lease / 2)) {
			ok, err := d.store.Acquire(ctx, sub, d.cfg.Owner, now.Add(d.cfg.Lease))
			if err != nil || !ok {
				held = time.Time{}
				d.wait(ctx, w, d.cfg.Poll)
				continue
			}
			held = now.Add(d.cfg.Lease)
		}
		if now.Sub(counted) > 2*time.Second {
			if n, err := d.store.Backlog(ctx, sub); err == nil {
				backlog.WithLabelValues(sub).Set(float64(n))
				counted = now
			}
		}
		if !d.step(ctx, sub, w, held.Add(-d.cfg.Lease/2)) {
			return
		}
	}
}

// A batch is one read of a queue: up to batchSize due deliveries sent
// back-to-back, for at most batchTime, their results stored with one
// write. The time bound keeps the delivery log at most about a second
// behind, what a kill repeats small, and a paused subscription stopped
// soon.
const (
	batchSize = 100
	batchTime = time.Second
)

// step sends the next batch of sub's queue, or waits for one to be due.
// renewAt is when the lease needs renewing: the batch stops before then.
// It returns false when the subscription is no longer active.
func (d *Dispatcher) step(ctx context.Context, sub string, w *worker, renewAt time.Time) bool {
	due, err := d.store.Due(ctx, sub, batchSize)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			d.log.WarnContext(ctx, "cannot read the webhook queue; retrying", "subscription", sub, "error", err)
		}
		d.wait(ctx, w, d.cfg.Poll)
		return true
	case len(due) == 0:
		d.wait(ctx, w, d.cfg.Poll)
		return true
	}
	if wait := time.Until(due[0].NextAttemptAt); wait > 0 {
		d.wait(ctx, w, min(wait, d.cfg.Poll))
		return true
	}
	// Read once per batch, after the batch: a change made before an event
	// was queued applies to that event.
	s, err := d.subs.Get(ctx, sub)
	if errors.Is(err, subscription.ErrNotFound) || (err == nil && s.Status != subscription.Active) {
		return false
	}
	if err != nil {
		d.wait(ctx, w, d.cfg.Poll)
		return true
	}
	stop := time.Now().Add(batchTime)
	if renewAt.Before(stop) {
		stop = renewAt
	}
	return d.sendBatch(ctx, s, due, stop)
}

func (d *Dispatcher) wait(ctx context.Context, w *worker, dur time.Duration) {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-w.nudge:
	case <-t.C:
	}
}

// sendBatch sends due in order, stopping after the first attempt that does
// not succeed (what follows waits for it: order per subscription), at the
// first delivery not due yet, and after stop; then it stores the results.
func (d *Dispatcher) sendBatch(ctx context.Context, s subscription.Subscription, due []Delivery, stop time.Time) bool {
	var sent []Delivery
	var out Outcome
	for i, dl := range due {
		now := time.Now()
		if i > 0 && (ctx.Err() != nil || now.After(stop) || now.Before(dl.NextAttemptAt)) {
			break
		}
		dl, out = d.attempt(ctx, s, dl)
		sent = append(sent, dl)
		if dl.Status != Succeeded {
			break
		}
	}
	return d.saveBatch(ctx, s, sent, out)
}

// attempt sends dl once and applies the result to it. Shutting down does
// not cut an attempt short: it finishes within the sender's timeout.
func (d *Dispatcher) attempt(ctx context.Context, s subscription.Subscription, dl Delivery) (Delivery, Outcome) {
	actx := context.WithoutCancel(ctx)
	actx, span := d.startSpan(actx, s, dl)
	defer span.End()
	a := d.send(actx, s, dl, time.Now().UTC())
	out := d.cfg.Retry.record(&dl, a, time.Now().UTC())
	observe(s.ID, dl, a, span)
	log := d.log.With("subscription", s.ID, "eventId", dl.EventID, "type", dl.Type, "attempt", dl.AttemptCount)
	switch {
	case dl.Status == Pending:
		log.InfoContext(actx, "webhook attempt failed; retried", "error", a.Error, "status", a.StatusCode, "retryAt", dl.NextAttemptAt)
	case dl.Status == Succeeded:
		log.DebugContext(actx, "webhook delivered", "status", a.StatusCode, "latency", a.Latency)
	}
	return dl, out
}

// send makes one attempt at dl for s at now, signed; with no secret to
// sign with, an attempt that fails at once, saying why, and sends nothing.
func (d *Dispatcher) send(ctx context.Context, s subscription.Subscription, dl Delivery, now time.Time) Attempt {
	if s.SecretError != "" {
		d.log.WarnContext(ctx, "webhook not sent: the subscription's signing secret does not open; rotate it",
			"subscription", s.ID, "eventId", dl.EventID, "reason", s.SecretError)
		return Attempt{At: now, Error: "not sent: " + s.SecretError + "; rotate the subscription's secret to resume"}
	}
	return d.sender.Send(ctx, Message{URL: s.URL, ID: dl.WebhookID(), Body: dl.Body, Secrets: s.Secrets(now)}, now)
}

// saveBatch saves a batch's results, then disables the subscription if the
// last attempt says so (only once its result is stored).
func (d *Dispatcher) saveBatch(ctx context.Context, s subscription.Subscription, sent []Delivery, out Outcome) bool {
	actx := context.WithoutCancel(ctx)
	if err := d.store.SaveAll(actx, sent); err != nil {
		// The attempts are made again: at least once.
		d.log.WarnContext(actx, "webhook attempts made, their results not stored; they will be repeated",
			"subscription", s.ID, "attempts", len(sent), "error", err)
		return true
	}
	if out.Disable == "" {
		return true
	}
	disabledTotal.WithLabelValues().Inc()
	d.log.WarnContext(actx, "webhook subscription disabled", "subscription", s.ID, "reason", out.Disable)
	if err := d.subs.Disable(actx, s.ID, out.Disable); err != nil {
		d.log.ErrorContext(actx, "cannot disable the webhook subscription", "subscription", s.ID, "error", err)
	}
	return false
}

// startSpan starts the attempt's span, a client span linked to the trace
// of the event it delivers.
func (d *Dispatcher) startSpan(ctx context.Context, s subscription.Subscription, dl Delivery) (context.Context, trace.Span) {
	ectx := otel.GetTextMapPropagator().Extract(context.Background(),
		propagation.MapCarrier{"traceparent": dl.TraceParent, "tracestate": dl.TraceState})
	return d.tracer.Start(ctx, "webhook "+dl.Type,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithLinks(trace.Link{SpanContext: trace.SpanContextFromContext(ectx)}),
		trace.WithAttributes(semconv.HTTPRequestMethodKey.String("POST"),
			attribute.String("webhook.subscription", s.ID), attribute.String("webhook.id", dl.WebhookID()),
			attribute.Int("webhook.attempt", dl.AttemptCount+1)))
}

func observe(sub string, dl Delivery, a Attempt, span trace.Span) {
	attemptDuration.WithLabelValues(sub).Observe(a.Latency.Seconds())
	if a.StatusCode != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(a.StatusCode))
	}
	switch {
	case dl.Status == Succeeded:
		attemptsTotal.WithLabelValues(sub, "success").Inc()
		deliveryLag.WithLabelValues(sub).Observe(time.Since(dl.EventTime).Seconds())
	case a.StatusCode == 410:
		attemptsTotal.WithLabelValues(sub, "gone").Inc()
		span.SetStatus(codes.Error, a.Error)
	default:
		attemptsTotal.WithLabelValues(sub, "failure").Inc()
		span.SetStatus(codes.Error, a.Error)
	}
}
