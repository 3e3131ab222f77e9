package delivery

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/services/webhook/internal/subscription"
)

type listSubs struct {
	oneSub
	all []subscription.Subscription
}

func (l listSubs) List(context.Context) ([]subscription.Subscription, error) { return l.all, nil }

// enqueueStore records what is queued.
type enqueueStore struct {
	Store
	calls [][]Delivery
}

func (e *enqueueStore) Enqueue(_ context.Context, ds []Delivery) error {
	e.calls = append(e.calls, ds)
	return nil
}

// A batch of events is queued with one insert: one delivery per event and
// active subscription that wants it; each subscription with news is told
// once; an event that is not a webhook type queues nothing.
func TestHandleBatchQueuesOnce(t *testing.T) {
	t.Parallel()
	subs := listSubs{all: []subscription.Subscription{
		{ID: "wh_all", EventTypes: []string{"*"}, Status: subscription.Active},
		{ID: "wh_tags", EventTypes: []string{"tag.*"}, Status: subscription.Active},
		{ID: "wh_paused", EventTypes: []string{"*"}, Status: subscription.Paused},
	}}
	st := &enqueueStore{}
	var told []string
	q := NewQueue(st, subs, func(s ...string) { told = append(told, s...) })
	now := time.Now()
	es := []events.Envelope{
		{ID: "e1", Type: events.TagDeleted, Time: now, Data: []byte(`{}`), Sequence: 1},
		{ID: "e2", Type: events.MediaDeleted, Time: now, Data: []byte(`{}`), Sequence: 2},
		{ID: "e3", Type: "library.something.else", Time: now, Data: []byte(`{}`), Sequence: 3},
	}
	if err := q.HandleBatch(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	if len(st.calls) != 1 {
		t.Fatalf("%d inserts, want 1", len(st.calls))
	}
	var got []string
	for _, d := range st.calls[0] {
		got = append(got, d.SubscriptionID+"/"+d.EventID)
	}
	if want := []string{"wh_all/e1", "wh_tags/e1", "wh_all/e2"}; !slices.Equal(got, want) {
		t.Errorf("queued %v, want %v", got, want)
	}
	if want := []string{"wh_all", "wh_tags"}; !slices.Equal(told, want) {
		t.Errorf("told %v, want %v", told, want)
	}
}
