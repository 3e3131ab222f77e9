package outbox

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/mongox"
)

// MoveLegacy moves the events that records of coll keep in themselves
// (fields outbox and outboxCount, written before the outbox became a
// collection) into o, one transaction per record, so that they are
// published once. Run it at start-up; it does nothing when none is left.
func (o *Outbox) MoveLegacy(ctx context.Context, client *mongo.Client, coll *mongo.Collection) (int, error) {
	cur, err := coll.Find(ctx, bson.M{"outboxCount": bson.M{"$gt": 0}},
		options.Find().SetProjection(bson.M{"_id": 1, "outbox": 1}))
	if err != nil {
		return 0, fmt.Errorf("find legacy outboxes in %s: %w", coll.Name(), err)
	}
	var docs []struct {
		ID     bson.RawValue     `bson:"_id"`
		Outbox map[string]legacy `bson:"outbox"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return 0, fmt.Errorf("read legacy outboxes in %s: %w", coll.Name(), err)
	}
	moved := 0
	for _, d := range docs {
		err := mongox.InTx(ctx, client, func(ctx context.Context) error {
			for id, e := range d.Outbox {
				rec := record{ID: id, Subject: e.Subject, Envelope: []byte(e.Envelope), TraceParent: e.TraceParent,
					TraceState: e.TraceState, CreatedAt: e.CreatedAt, Order: o.order.Add(1)}
				if _, err := o.coll.ReplaceOne(ctx, bson.M{"_id": id}, rec, options.Replace().SetUpsert(true)); err != nil {
					return err
				}
			}
			_, err := coll.UpdateOne(ctx, bson.M{"_id": d.ID}, bson.M{"$unset": bson.M{"outbox": "", "outboxCount": ""}})
			mongox.OnCommit(ctx, o.Wake)
			return err
		})
		if err != nil {
			return moved, fmt.Errorf("move the legacy outbox of a record of %s: %w", coll.Name(), err)
		}
		moved += len(d.Outbox)
	}
	return moved, nil
}

// legacy is an event as records kept it in themselves.
type legacy struct {
	Subject     string    `bson:"subject"`
	Envelope    string    `bson:"envelope"`
	TraceParent string    `bson:"traceparent,omitempty"`
	TraceState  string    `bson:"tracestate,omitempty"`
	CreatedAt   time.Time `bson:"createdAt"`
}
