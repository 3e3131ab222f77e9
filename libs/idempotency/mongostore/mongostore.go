// Package mongostore keeps idempotency keys in a MongoDB collection, one
// document per caller and key, removed by a TTL index once expired, and
// treated as absent once expired anyway (a TTL monitor runs once a
// minute). The development database (FerretDB 1.x) has no TTL indexes:
// there the store removes expired keys itself, at most once a minute.
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/idempotency"
)

// Collection is the collection's name in a service's database.
const Collection = "idempotency_keys"

// Store is an idempotency.Store on MongoDB.
type Store struct {
	c *mongo.Collection
	// lastSweep is when expired keys were last removed (Unix nanoseconds),
	// with no TTL index only.
	lastSweep *atomic.Int64
}

// sweepEvery is how often a store without a TTL index removes expired keys.
const sweepEvery = time.Minute

// codeNotImplemented is the server error of a database without TTL
// indexes (FerretDB 1.x).
const codeNotImplemented = 238

type record struct {
	ID          string              `bson:"_id"`
	Fingerprint string              `bson:"fingerprint"`
	Owner       string              `bson:"owner"`
	Done        bool                `bson:"done"`
	Status      int                 `bson:"status,omitempty"`
	Header      map[string][]string `bson:"header,omitempty"`
	Body        []byte              `bson:"body,omitempty"`
	LeaseUntil  time.Time           `bson:"leaseUntil"`
	ExpiresAt   time.Time           `bson:"expiresAt"`
}

// New returns a Store on db's Collection and ensures its TTL index. When
// the index cannot be made (no TTL indexes, or the database is down at
// start-up) the store removes expired keys itself; the error says why,
// for the log, and the store is usable anyway.
func New(ctx context.Context, db *mongo.Database) (*Store, error) {
	c := db.Collection(Collection)
	_, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "expiresAt", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0).SetName("expiresAt_ttl"),
	})
	var se mongo.ServerError
	switch {
	case err == nil:
		return &Store{c: c}, nil
	case errors.As(err, &se) && se.HasErrorCode(codeNotImplemented):
		return &Store{c: c, lastSweep: &atomic.Int64{}}, nil
	default:
		return &Store{c: c, lastSweep: &atomic.Int64{}}, fmt.Errorf("idempotency keys TTL index (expired keys are removed by the service instead): %w", err)
	}
}

// Middleware is the wiring of a service: idempotency.Middleware on db's
// keys, kept for retention; streamed says which requests' bodies are
// digested as they stream.
func Middleware(ctx context.Context, db *mongo.Database, log *slog.Logger, retention time.Duration,
	streamed func(*http.Request) bool) gin.HandlerFunc {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	store, err := New(ctx, db)
	if err != nil {
		log.Warn("idempotency keys", "error", err.Error())
	}
	return idempotency.Middleware(idempotency.Config{Store: store, Retention: retention, Streamed: streamed, Log: log})
}

// sweep removes expired keys when there is no TTL index to do it, at
// most once every sweepEvery; a failure waits for the next.
func (s *Store) sweep(ctx context.Context, now time.Time) {
	last := s.lastSweep.Load()
	if now.UnixNano()-last < int64(sweepEvery) || !s.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return
	}
	_, _ = s.c.DeleteMany(ctx, bson.M{"expiresAt": bson.M{"$lte": now}})
}

// Claim inserts rec; when its id is taken, it returns the live record, or
// replaces a dead one (expired, or a lapsed lease) with a conditional
// write, so two retries racing for a dead key do not both win.
func (s *Store) Claim(ctx context.Context, rec idempotency.Record, now time.Time) (idempotency.Record, bool, error) {
	if s.lastSweep != nil {
		s.sweep(ctx, now)
	}
	for range 3 {
		_, err := s.c.InsertOne(ctx, toDoc(rec))
		if err == nil {
			return idempotency.Record{}, true, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return idempotency.Record{}, false, err
		}
		var old record
		err = s.c.FindOne(ctx, bson.M{"_id": rec.ID}).Decode(&old)
		if errors.Is(err, mongo.ErrNoDocuments) {
			continue // removed meanwhile: insert again
		}
		if err != nil {
			return idempotency.Record{}, false, err
		}
		existing := fromDoc(old)
		if idempotency.Live(existing, now) {
			return existing, false, nil
		}
		res, err := s.c.ReplaceOne(ctx, bson.M{"_id": rec.ID, "owner": old.Owner}, toDoc(rec))
		if err != nil {
			return idempotency.Record{}, false, err
		}
		if res.MatchedCount == 1 {
			return idempotency.Record{}, true, nil
		}
	}
	return idempotency.Record{}, false, errors.New("idempotency key: claim kept racing")
}

// Complete stores the outcome, if owner still holds id.
func (s *Store) Complete(ctx context.Context, id, owner, fingerprint string, res idempotency.Response) error {
	_, err := s.c.UpdateOne(ctx, bson.M{"_id": id, "owner": owner}, bson.M{"$set": bson.M{
		"done": true, "fingerprint": fingerprint, "status": res.Status, "header": map[string][]string(res.Header), "body": res.Body,
	}})
	return err
}

// Release removes owner's record of id.
func (s *Store) Release(ctx context.Context, id, owner string) error {
	_, err := s.c.DeleteOne(ctx, bson.M{"_id": id, "owner": owner})
	return err
}

func toDoc(r idempotency.Record) record {
	return record{ID: r.ID, Fingerprint: r.Fingerprint, Owner: r.Owner, Done: r.Done, Status: r.Response.Status,
		Header: r.Response.Header, Body: r.Response.Body, LeaseUntil: r.LeaseUntil, ExpiresAt: r.ExpiresAt}
}

func fromDoc(d record) idempotency.Record {
	return idempotency.Record{ID: d.ID, Fingerprint: d.Fingerprint, Owner: d.Owner, Done: d.Done,
		Response:   idempotency.Response{Status: d.Status, Header: http.Header(d.Header), Body: d.Body},
		LeaseUntil: d.LeaseUntil, ExpiresAt: d.ExpiresAt}
}
