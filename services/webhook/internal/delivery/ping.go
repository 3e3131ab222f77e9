package delivery

import (
	"context"
	"encoding/json"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/webhook/internal/eventtype"
	"github.com/doclib/services/webhook/internal/subscription"
)

// Ping sends a test event to s at once, outside its queue (a ping waits
// for nothing and holds nothing up), records it in the log and returns it.
// A failed ping is not retried and disables nothing.
func (d *Dispatcher) Ping(ctx context.Context, s subscription.Subscription) (Delivery, error) {
	// Milliseconds, as events and the delivery log have them.
	now := time.Now().UTC().Truncate(time.Millisecond)
	data, _ := json.Marshal(map[string]string{"subscriptionId": s.ID})
	body, err := json.Marshal(Payload{Type: eventtype.Ping, Timestamp: httpx.FormatTime(now), Data: data})
	if err != nil {
		return Delivery{}, err
	}
	dl := Delivery{SubscriptionID: s.ID, EventID: "ping_" + events.NewID(), Type: eventtype.Ping, Body: body,
		Status: Pending, EventTime: now, CreatedAt: now}
	a := d.send(ctx, s, dl, now)
	dl.AttemptCount, dl.Attempts, dl.DoneAt = 1, []Attempt{a}, time.Now().UTC()
	dl.Status = Failed
	if a.Error == "" && a.StatusCode >= 200 && a.StatusCode < 300 {
		dl.Status = Succeeded
	}
	return dl, d.store.Save(ctx, dl)
}
