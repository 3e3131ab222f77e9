package outbox

import (
	"context"
	"encoding/json"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/events"
)

// Pending returns the envelopes recorded and not yet published, in the
// order the relay publishes them: what a test of a store reads to check
// that a change recorded its events.
func (o *Outbox) Pending(ctx context.Context) ([]events.Envelope, error) {
	cur, err := o.coll.Find(ctx, bson.M{}, options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "order", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	var recs []record
	if err := cur.All(ctx, &recs); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	out := make([]events.Envelope, len(recs))
	for i, r := range recs {
		if err := json.Unmarshal(r.Envelope, &out[i]); err != nil {
			return nil, fmt.Errorf("outbox: entry %s: %w", r.ID, err)
		}
	}
	return out, nil
}
