package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/webhook/internal/eventtype"
	"github.com/doclib/services/webhook/internal/subscription"
)

// Subscriptions is what the delivery needs of the subscriptions.
type Subscriptions interface {
	Get(ctx context.Context, id string) (subscription.Subscription, error)
	List(ctx context.Context) ([]subscription.Subscription, error)
	Disable(ctx context.Context, id, reason string) error
}

// Payload is the body of every webhook (Standard Webhooks' recommended
// shape): the event type, when it happened, and the event's own content.
type Payload struct {
	Type string `json:"type"`
	// Timestamp is written as every date of the API (httpx.TimeFormat:
	// UTC, always three digits of milliseconds), whatever precision the
	// time it was made from had.
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Queue turns consumed events into deliveries.
type Queue struct {
	store Store
	subs  Subscriptions
	// queued is told which subscriptions have new deliveries.
	queued func(subs ...string)
}

// NewQueue returns a Queue; queued may be nil.
func NewQueue(store Store, subs Subscriptions, queued func(subs ...string)) *Queue {
	if queued == nil {
		queued = func(...string) {}
	}
	return &Queue{store: store, subs: subs, queued: queued}
}

// Handle is the event consumer's handler: it stores one delivery per
// active subscription that wants the event, and returns only once they are
// stored, so the event is acknowledged after its deliveries are safe. A
// redelivered event stores nothing twice.
func (q *Queue) Handle(ctx context.Context, e events.Envelope) error {
	return q.HandleBatch(ctx, []events.Envelope{e})
}

// HandleBatch is Handle for several events at once (the consumer's batch
// handler): one read of the subscriptions and one insert for them all, so
// a burst of events costs a few writes, not one per event. The attempts'
// spans link to the span of the call, which links to every event's trace.
func (q *Queue) HandleBatch(ctx context.Context, es []events.Envelope) error {
	subs, err := q.subs.List(ctx)
	if err != nil {
		return err
	}
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	var ds []Delivery
	for _, e := range es {
		more, err := deliveries(subs, e, carrier, time.Now().UTC())
		if err != nil {
			return err
		}
		ds = append(ds, more...)
	}
	if len(ds) == 0 {
		return nil
	}
	if err := q.store.Enqueue(ctx, ds); err != nil {
		return err
	}
	seen := map[string]bool{}
	var ids []string
	for _, d := range ds {
		if !seen[d.SubscriptionID] {
			seen[d.SubscriptionID] = true
			ids = append(ids, d.SubscriptionID)
		}
	}
	q.queued(ids...)
	return nil
}

// deliveries returns e's deliveries, one per subscription that wants it.
func deliveries(subs []subscription.Subscription, e events.Envelope, carrier propagation.MapCarrier, now time.Time) ([]Delivery, error) {
	name, ok := eventtype.FromSubject(e.Type)
	if !ok {
		return nil, nil // not a webhook event type (yet): nothing to send
	}
	body, err := json.Marshal(Payload{Type: name, Timestamp: httpx.FormatTime(e.Time), Data: e.Data})
	if err != nil {
		return nil, events.Permanent(fmt.Errorf("encode payload: %w", err))
	}
	var ds []Delivery
	for _, s := range subs {
		if s.Wants(name) {
			ds = append(ds, Delivery{SubscriptionID: s.ID, EventID: e.ID, Type: name, Sequence: e.Sequence, Body: body,
				TraceParent: carrier["traceparent"], TraceState: carrier["tracestate"], Status: Pending,
				NextAttemptAt: now, EventTime: e.Time.UTC(), CreatedAt: now})
		}
	}
	return ds, nil
}
