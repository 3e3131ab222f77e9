package mongostore

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/events"
)

// TODO(txservices): replaced by libs/mongox InTx and the libs outbox once they land.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if mongo.SessionFromContext(ctx) != nil {
		return fn(ctx)
	}
	sess, err := s.db.Client().StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(context.WithoutCancel(ctx))
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) { return nil, fn(ctx) })
	return err
}

type outboxColl struct{ c *mongo.Collection }

func newOutbox(db *mongo.Database) *outboxColl { return &outboxColl{c: db.Collection("outbox")} }

func (o *outboxColl) Add(ctx context.Context, evs ...events.Event) error {
	for _, ev := range evs {
		if _, err := o.c.InsertOne(ctx, ev.Envelope); err != nil {
			return err
		}
	}
	return nil
}
