package mongox

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Revision is a number kept in one document ({_id: id, rev}) that a store
// moves after each write, so that the in-memory renderings of every replica
// (rendering.Cache) can tell, with one small read, whether anything changed.
type Revision struct {
	coll *mongo.Collection
	id   string
	log  *slog.Logger
}

// NewRevision returns the revision kept in coll under id.
func NewRevision(coll *mongo.Collection, id string, log *slog.Logger) *Revision {
	return &Revision{coll: coll, id: id, log: log}
}

// Get returns the current revision (0 before the first write).
func (r *Revision) Get(ctx context.Context) (int64, error) {
	var m struct {
		Rev int64 `bson:"rev"`
	}
	err := r.coll.FindOne(ctx, bson.M{"_id": r.id}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return m.Rev, err
}

// Bump moves the revision after a write. It never fails the write that
// already happened (a client told 500 would retry it): a lost bump only
// delays other replicas by their caches' MaxAge, and is logged. Two first
// upserts racing make one fail on the unique _id; it is retried.
//
// A client gone now must not stop the bump (the write is done), but the
// request's deadline still bounds it, with at least bumpGrace left: a bump
// after a write that failed because the database is down must not make the
// answer wait another timeout.
func (r *Revision) Bump(ctx context.Context) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(bumpTimeout)
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), later(deadline, time.Now().Add(bumpGrace)))
	defer cancel()
	inc := func() error {
		_, err := r.coll.UpdateOne(ctx, bson.M{"_id": r.id}, bson.M{"$inc": bson.M{"rev": int64(1)}},
			options.UpdateOne().SetUpsert(true))
		return err
	}
	err := inc()
	if mongo.IsDuplicateKeyError(err) {
		err = inc()
	}
	if err != nil {
		r.log.WarnContext(ctx, "revision not moved; other replicas see the change within their cache's max age",
			"revision", r.id, "error", err)
	}
}

// How long a bump may take: without a deadline of the caller's, and at
// least, when the caller's is (nearly) spent.
const (
	bumpTimeout = 5 * time.Second
	bumpGrace   = 200 * time.Millisecond
)

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
