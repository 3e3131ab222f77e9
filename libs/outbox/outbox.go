// Package outbox publishes the events of a change exactly when the change
// commits: the change's transaction adds them to the service's outbox
// collection (Add), and a relay in every replica publishes them, in the
// order they were added, then removes them. The relay is woken in-process
// once the transaction commits, so an event leaves within milliseconds; it
// also polls, to publish what a replica that crashed before its relay ran
// left behind. Delivery is at least once: an entry is removed only after
// the stream acknowledged it, and the event id is the message id, so the
// stream drops a second copy published by another replica or after a
// crash.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/periodic"
)

// Collection is the outbox's collection in a service's database.
const Collection = "outbox"

// record is one pending event as stored.
type record struct {
	ID          string    `bson:"_id"` // the event id
	Subject     string    `bson:"subject"`
	Envelope    []byte    `bson:"envelope"` // the exact JSON bytes to publish
	TraceParent string    `bson:"traceparent,omitempty"`
	TraceState  string    `bson:"tracestate,omitempty"`
	CreatedAt   time.Time `bson:"createdAt"`
	// Order sorts the entries (CreatedAt, then Order): events added in one
	// transaction leave in the order they were added.
	Order int64 `bson:"order"`
}

// Outbox is a service's outbox collection and its relay.
type Outbox struct {
	coll  *mongo.Collection
	log   *slog.Logger
	wake  chan struct{}
	order atomic.Int64
}

// New returns the outbox kept in db.
func New(db *mongo.Database, log *slog.Logger) *Outbox {
	o := &Outbox{coll: db.Collection(Collection), log: log.With("component", "outbox-relay"), wake: make(chan struct{}, 1)}
	o.order.Store(time.Now().UnixNano())
	return o
}

// EnsureIndexes creates the index the relay reads in order.
func (o *Outbox) EnsureIndexes(ctx context.Context) error {
	return mongox.EnsureIndexes(ctx, o.coll, mongox.Index("createdAt_order", false, "createdAt", "order"))
}

// Collection is the outbox's collection (tests read it).
func (o *Outbox) Collection() *mongo.Collection { return o.coll }

// Add records evs in the transaction ctx belongs to (mongox.InTx): they
// are published if and only if it commits, and the relay is woken then.
func (o *Outbox) Add(ctx context.Context, evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	docs := make([]any, 0, len(evs))
	for _, ev := range evs {
		m, err := events.MessageOf(ev)
		if err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		docs = append(docs, record{ID: m.ID, Subject: m.Subject, Envelope: m.Data, TraceParent: m.TraceParent,
			TraceState: m.TraceState, CreatedAt: ev.Time, Order: o.order.Add(1)})
	}
	if _, err := o.coll.InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	mongox.OnCommit(ctx, o.Wake)
	return nil
}

// Wake asks the relay for a pass now instead of at its next poll. It never
// blocks; wakes coalesce. While publishing fails, the backoff holds.
func (o *Outbox) Wake() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Start runs the relay until stop is called; stop ends it after one last
// pass and waits for it. Call stop once the HTTP server has finished its
// in-flight requests, so the events they recorded leave now.
func (o *Outbox) Start(pub Publisher, cfg RelayConfig) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.Run(ctx, pub, cfg)
	}()
	return func() {
		cancel()
		<-done
	}
}

// Run publishes until ctx ends, then makes one last pass unless publishing
// was failing. Failures are retried with backoff (from Interval, doubling,
// at most MaxBackoff, with jitter) and logged once per outage.
func (o *Outbox) Run(ctx context.Context, pub Publisher, cfg RelayConfig) {
	cfg = cfg.withDefaults()
	retry := periodic.NewBackoff(cfg.Interval, cfg.MaxBackoff)
	o.log.Info("outbox relay started", "collection", o.coll.Name(), "interval", cfg.Interval)
	failures := 0
	var failingSince time.Time
	for ctx.Err() == nil {
		more, err := o.pass(ctx, pub, cfg)
		if ctx.Err() != nil {
			break
		}
		wait, wake := cfg.Interval, o.wake
		switch {
		case err != nil:
			if failures++; failures == 1 {
				failingSince = time.Now()
				retry.Reset()
				o.log.Error("outbox relay failing; entries are kept and retried", "error", err)
			}
			wait, wake = retry.NextBackOff(), nil
		case failures > 0:
			o.log.Info("outbox relay recovered", "after", time.Since(failingSince).Round(time.Millisecond), "attempts", failures)
			failures = 0
		}
		if err == nil && more {
			continue
		}
		sleep(ctx, wait, wake)
	}
	if failures == 0 {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.PublishTimeout)
		if _, err := o.pass(fctx, pub, cfg); err != nil {
			o.log.Warn("outbox relay's last pass failed; the entries wait for the next start or another replica", "error", err)
		}
		cancel()
	}
	o.log.Info("outbox relay stopped")
}

func sleep(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-wake:
	}
}

// pass publishes a batch in order and removes what the stream took. It
// stops at the first failure: the entries after it keep their order. more
// reports a full batch.
func (o *Outbox) pass(ctx context.Context, pub Publisher, cfg RelayConfig) (more bool, err error) {
	cur, err := o.coll.Find(ctx, bson.M{}, options.Find().
		SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "order", Value: 1}}).SetLimit(int64(cfg.BatchSize)))
	if err != nil {
		return false, fmt.Errorf("read the outbox: %w", err)
	}
	var recs []record
	if err := cur.All(ctx, &recs); err != nil {
		return false, fmt.Errorf("read the outbox: %w", err)
	}
	observe(o.coll.Name(), recs)
	var done []string
	for _, r := range recs {
		pctx, cancel := context.WithTimeout(ctx, cfg.PublishTimeout)
		err = pub.Publish(pctx, events.Message{ID: r.ID, Subject: r.Subject, Data: r.Envelope,
			TraceParent: r.TraceParent, TraceState: r.TraceState})
		cancel()
		if err != nil {
			break
		}
		done = append(done, r.ID)
	}
	if len(done) > 0 {
		if _, derr := o.coll.DeleteMany(ctx, bson.M{"_id": bson.M{"$in": done}}); derr != nil {
			err = errors.Join(err, fmt.Errorf("remove published outbox entries: %w", derr))
		}
	}
	return err == nil && len(recs) == cfg.BatchSize, err
}
