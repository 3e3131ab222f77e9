// Package mongostore keeps webhook deliveries in MongoDB: the queue and
// log (webhook_deliveries, one document per subscription and event, whose
// _id makes a redelivered event's insert a no-op) and the workers' leases
// (webhook_leases, one per subscription).
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/services/webhook/internal/delivery"
)

// Store implements delivery.Store.
type Store struct {
	deliveries *mongo.Collection
	leases     *mongo.Collection
	retention  time.Duration
}

var _ delivery.Store = (*Store)(nil)

// New returns a store on db; finished deliveries are kept for retention.
func New(db *mongo.Database, retention time.Duration) *Store {
	return &Store{deliveries: db.Collection("webhook_deliveries"), leases: db.Collection("webhook_leases"), retention: retention}
}

// EnsureIndexes creates the queue's and the log's indexes, and the TTL
// index that removes a finished delivery once its retention is over.
func (st *Store) EnsureIndexes(ctx context.Context) error {
	return mongox.EnsureIndexes(ctx, st.deliveries,
		mongox.Index("queue", false, "sub", "status", "seq", "createdAt"),
		mongox.Index("log", false, "sub", "createdAt"),
		mongo.IndexModel{Keys: bson.D{{Key: "expireAt", Value: 1}},
			Options: options.Index().SetName("expire").SetExpireAfterSeconds(0)})
}

type attemptDoc struct {
	At         time.Time `bson:"at"`
	StatusCode int       `bson:"statusCode,omitempty"`
	LatencyMs  int64     `bson:"latencyMs"`
	Error      string    `bson:"error,omitempty"`
}

type doc struct {
	ID            string       `bson:"_id"`
	Sub           string       `bson:"sub"`
	Event         string       `bson:"event"`
	Type          string       `bson:"type"`
	Seq           int64        `bson:"seq"`
	Body          []byte       `bson:"body"`
	TraceParent   string       `bson:"traceparent,omitempty"`
	TraceState    string       `bson:"tracestate,omitempty"`
	Status        string       `bson:"status"`
	AttemptCount  int          `bson:"attemptCount"`
	Attempts      []attemptDoc `bson:"attempts"`
	NextAttemptAt time.Time    `bson:"nextAttemptAt"`
	FailingSince  *time.Time   `bson:"failingSince,omitempty"`
	EventTime     time.Time    `bson:"eventTime"`
	CreatedAt     time.Time    `bson:"createdAt"`
	DoneAt        *time.Time   `bson:"doneAt,omitempty"`
	ExpireAt      *time.Time   `bson:"expireAt,omitempty"`
}

func key(sub, event string) string { return sub + "/" + event }

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (st *Store) toDoc(d delivery.Delivery) doc {
	out := doc{ID: key(d.SubscriptionID, d.EventID), Sub: d.SubscriptionID, Event: d.EventID, Type: d.Type,
		Seq: int64(d.Sequence), Body: d.Body, TraceParent: d.TraceParent, TraceState: d.TraceState,
		Status: string(d.Status), AttemptCount: d.AttemptCount, NextAttemptAt: d.NextAttemptAt,
		FailingSince: optTime(d.FailingSince), EventTime: d.EventTime, CreatedAt: d.CreatedAt, DoneAt: optTime(d.DoneAt),
		Attempts: make([]attemptDoc, len(d.Attempts))}
	for i, a := range d.Attempts {
		out.Attempts[i] = attemptDoc{At: a.At, StatusCode: a.StatusCode, LatencyMs: a.Latency.Milliseconds(), Error: a.Error}
	}
	if d.Status != delivery.Pending && !d.DoneAt.IsZero() {
		out.ExpireAt = optTime(d.DoneAt.Add(st.retention))
	}
	return out
}

func (d doc) delivery() delivery.Delivery {
	out := delivery.Delivery{SubscriptionID: d.Sub, EventID: d.Event, Type: d.Type, Sequence: uint64(d.Seq), Body: d.Body,
		TraceParent: d.TraceParent, TraceState: d.TraceState, Status: delivery.Status(d.Status),
		AttemptCount: d.AttemptCount, NextAttemptAt: d.NextAttemptAt.UTC(), EventTime: d.EventTime.UTC(),
		CreatedAt: d.CreatedAt.UTC(), Attempts: make([]delivery.Attempt, len(d.Attempts))}
	if d.FailingSince != nil {
		out.FailingSince = d.FailingSince.UTC()
	}
	if d.DoneAt != nil {
		out.DoneAt = d.DoneAt.UTC()
	}
	for i, a := range d.Attempts {
		out.Attempts[i] = delivery.Attempt{At: a.At.UTC(), StatusCode: a.StatusCode,
			Latency: time.Duration(a.LatencyMs) * time.Millisecond, Error: a.Error}
	}
	return out
}

// Enqueue inserts the deliveries not stored yet; a duplicate key is one
// stored by an earlier delivery of the same event.
func (st *Store) Enqueue(ctx context.Context, ds []delivery.Delivery) error {
	docs := make([]any, len(ds))
	for i, d := range ds {
		docs[i] = st.toDoc(d)
	}
	_, err := st.deliveries.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err != nil && !onlyDuplicates(err) {
		return fmt.Errorf("queue deliveries: %w", err)
	}
	return nil
}

func onlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	for _, we := range bwe.WriteErrors {
		if we.Code != 11000 {
			return false
		}
	}
	return true
}

// Due returns up to limit of sub's pending deliveries, lowest sequence
// first. One read serves a whole batch.
func (st *Store) Due(ctx context.Context, sub string, limit int) ([]delivery.Delivery, error) {
	return st.find(ctx, "due deliveries", bson.M{"sub": sub, "status": string(delivery.Pending)},
		bson.D{{Key: "seq", Value: 1}, {Key: "createdAt", Value: 1}}, limit)
}

// find returns up to limit deliveries matching filter in order sort; what
// names the read in errors.
func (st *Store) find(ctx context.Context, what string, filter bson.M, sort bson.D, limit int) ([]delivery.Delivery, error) {
	cur, err := st.deliveries.Find(ctx, filter, options.Find().SetSort(sort).SetLimit(int64(limit)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make([]delivery.Delivery, len(docs))
	for i, d := range docs {
		out[i] = d.delivery()
	}
	return out, nil
}

// SaveAll replaces queued deliveries with one bulk write of replaces by
// _id (no upsert: a delivery dropped with its subscription stays gone).
func (st *Store) SaveAll(ctx context.Context, ds []delivery.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	models := make([]mongo.WriteModel, len(ds))
	for i, d := range ds {
		dd := st.toDoc(d)
		models[i] = mongo.NewReplaceOneModel().SetFilter(bson.M{"_id": dd.ID}).SetReplacement(dd)
	}
	if _, err := st.deliveries.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false)); err != nil {
		return fmt.Errorf("save deliveries: %w", err)
	}
	return nil
}

// Save stores d, inserting it if needed (a test ping).
func (st *Store) Save(ctx context.Context, d delivery.Delivery) error {
	dd := st.toDoc(d)
	if _, err := st.deliveries.ReplaceOne(ctx, bson.M{"_id": dd.ID}, dd, options.Replace().SetUpsert(true)); err != nil {
		return fmt.Errorf("save delivery: %w", err)
	}
	return nil
}

// Log returns sub's deliveries, newest first.
func (st *Store) Log(ctx context.Context, sub string, limit int) ([]delivery.Delivery, error) {
	return st.find(ctx, "delivery log", bson.M{"sub": sub}, bson.D{{Key: "createdAt", Value: -1}, {Key: "seq", Value: -1}}, limit)
}

// Retry makes a delivery pending and due at now.
func (st *Store) Retry(ctx context.Context, sub, event string, now time.Time) error {
	res, err := st.deliveries.UpdateOne(ctx, bson.M{"_id": key(sub, event)}, bson.M{
		"$set":   bson.M{"status": string(delivery.Pending), "nextAttemptAt": now},
		"$unset": bson.M{"doneAt": "", "expireAt": "", "failingSince": ""},
	})
	if err != nil {
		return fmt.Errorf("retry delivery: %w", err)
	}
	if res.MatchedCount == 0 {
		return delivery.ErrNotFound
	}
	return nil
}

// Backlog counts sub's pending deliveries.
func (st *Store) Backlog(ctx context.Context, sub string) (int64, error) {
	return st.deliveries.CountDocuments(ctx, bson.M{"sub": sub, "status": string(delivery.Pending)})
}

// Drop removes every delivery of sub.
func (st *Store) Drop(ctx context.Context, sub string) error {
	_, err := st.deliveries.DeleteMany(ctx, bson.M{"sub": sub})
	return err
}

// Acquire takes the lease when it is free, expired or already owner's. The
// upsert's insert fails on the _id when another owner holds it.
func (st *Store) Acquire(ctx context.Context, sub, owner string, until time.Time) (bool, error) {
	now := time.Now()
	_, err := st.leases.UpdateOne(ctx,
		bson.M{"_id": sub, "$or": bson.A{bson.M{"owner": owner}, bson.M{"until": bson.M{"$lt": now}}}},
		bson.M{"$set": bson.M{"owner": owner, "until": until}}, options.UpdateOne().SetUpsert(true))
	if mongo.IsDuplicateKeyError(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lease: %w", err)
	}
	return true, nil
}

// Release frees owner's lease.
func (st *Store) Release(ctx context.Context, sub, owner string) error {
	_, err := st.leases.DeleteOne(ctx, bson.M{"_id": sub, "owner": owner})
	return err
}
