package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/doclib/libs/events"
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
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
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
	name, ok := eventtype.FromSubject(e.Type)
	if !ok {
		return nil // not a webhook event type (yet): nothing to send
	}
	subs, err := q.subs.List(ctx)
	if err != nil {
		return err
	}
	body, err := json.Marshal(Payload{Type: name, Timestamp: e.Time.UTC(), Data: e.Data})
	if err != nil {
		return events.Permanent(fmt.Errorf("encode payload: %w", err))
	}
	// The consumer's span is the event's trace: each attempt links to it.
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	now := time.Now().UTC()
	var ds []Delivery
	var ids []string
	for _, s := range subs {
		if !s.Wants(name) {
			continue
		}
		ds = append(ds, Delivery{SubscriptionID: s.ID, EventID: e.ID, Type: name, Sequence: e.Sequence, Body: body,
			TraceParent: carrier["traceparent"], TraceState: carrier["tracestate"], Status: Pending,
			NextAttemptAt: now, EventTime: e.Time.UTC(), CreatedAt: now})
		ids = append(ids, s.ID)
	}
	if len(ds) == 0 {
		return nil
	}
	if err := q.store.Enqueue(ctx, ds); err != nil {
		return err
	}
	q.queued(ids...)
	return nil
}
