package outbox

// The outbox kept inside documents, which taxonomy, media and webhook use until they write
// through transactions and Outbox; delete this file and legacy_add.go then.

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/periodic"
)

// Relay publishes the outbox entries of some collections and removes them.
//
// Every replica of a service runs one; they need no leader. Two relays may
// publish the same entry: the stream drops the second copy (the event id is
// the message id), and the removal is conditional on the entry still being
// there, so outboxCount stays right. An entry is removed only after the
// stream acknowledged it, so a crash or an outage anywhere leaves it to be
// published again: delivery is at least once.
type Relay struct {
	pub   Publisher
	colls []*mongo.Collection
	log   *slog.Logger
	cfg   RelayConfig
	nudge chan struct{}
	retry *backoff.ExponentialBackOff // used by Run's goroutine only
}

// NewRelay returns a relay for the outboxes of colls. Each collection needs
// an index on outboxCount.
func NewRelay(pub Publisher, log *slog.Logger, cfg RelayConfig, colls ...*mongo.Collection) *Relay {
	cfg = cfg.withDefaults()
	return &Relay{
		pub: pub, colls: colls, log: log.With("component", "outbox-relay"),
		cfg: cfg, nudge: make(chan struct{}, 1), retry: periodic.NewBackoff(cfg.Interval, cfg.MaxBackoff),
	}
}

// Nudge asks for a pass now instead of at the next poll. Call it after a
// write that added entries, so events leave within milliseconds. It never
// blocks; nudges coalesce. While publishing is failing, nudges are ignored
// and the backoff holds.
func (r *Relay) Nudge() {
	select {
	case r.nudge <- struct{}{}:
	default:
	}
}

// Run publishes until ctx ends, then makes one last pass (unless
// publishing was failing) and returns nil. Failures are retried with
// backoff and logged once per outage. The AfterPublish hook runs in its
// own goroutine, one run at a time, so a slow hook (a sweep waiting on an
// unreachable object store) never holds up publishing.
func (r *Relay) Run(ctx context.Context) error {
	r.log.Info("outbox relay started", "collections", len(r.colls), "interval", r.cfg.Interval)
	var (
		failures     int
		failingSince time.Time
		hook         = r.newHookRunner()
	)
	for {
		removed, more, err := r.pass(ctx)
		if ctx.Err() != nil {
			break
		}
		if removed > 0 {
			hook.pending()
		}
		hook.startIfDue(ctx)

		wait := min(r.cfg.Interval, hook.dueIn())
		switch {
		case err != nil:
			failures++
			if failures == 1 {
				failingSince = time.Now()
				r.log.Error("outbox relay failing; entries are kept and retried", "error", err)
			} else {
				r.log.Debug("outbox relay still failing", "error", err, "attempt", failures)
			}
			wait = r.backoff(failures)
		case failures > 0:
			r.log.Info("outbox relay recovered", "after", time.Since(failingSince).Round(time.Millisecond),
				"attempts", failures)
			failures = 0
		}
		if err == nil && more {
			// A full batch: there may be more right away. A finished hook
			// is collected, so it can run again during a long backlog.
			select {
			case herr := <-hook.done:
				hook.finished(herr)
			default:
			}
			continue
		}

		timer := time.NewTimer(wait)
		nudge := r.nudge
		if failures > 0 {
			nudge = nil // hold the backoff
		}
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-nudge:
		case herr := <-hook.done:
			hook.finished(herr)
		}
		timer.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	hook.wait()
	if failures == 0 {
		// Events recorded by requests that finished just before the stop
		// leave now rather than at the next start.
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.PublishTimeout)
		if _, _, err := r.pass(fctx); err != nil {
			r.log.Warn("outbox relay's last pass failed; the entries wait for the next start or another replica", "error", err)
		}
		cancel()
	}
	r.log.Info("outbox relay stopped")
	return nil
}

// hookRunner runs the AfterPublish hook in its own goroutine, at most once
// per AfterEvery and one run at a time, until a run succeeds after the
// last removal.
type hookRunner struct {
	r       *Relay
	done    chan error // a run's result; nil channel when there is no hook
	running bool
	ranAt   time.Time
	// gen counts removals; a run that succeeds clears the work up to the
	// generation it started at.
	gen, startedAt, doneGen int
	failing                 bool
}

func (r *Relay) newHookRunner() *hookRunner {
	h := &hookRunner{r: r}
	if r.cfg.AfterPublish != nil {
		h.done = make(chan error, 1)
		// Pending from the start: a previous process may have stopped
		// between a removal and its sweep.
		h.gen = 1
	}
	return h
}

func (h *hookRunner) pending() {
	if h.done != nil {
		h.gen++
	}
}

// dueIn is how long until the hook should run next (Interval if nothing
// is pending).
func (h *hookRunner) dueIn() time.Duration {
	if h.done == nil || h.running || h.doneGen == h.gen {
		return h.r.cfg.Interval
	}
	return max(h.r.cfg.AfterEvery-time.Since(h.ranAt), time.Millisecond)
}

func (h *hookRunner) startIfDue(ctx context.Context) {
	if h.done == nil || h.running || h.doneGen == h.gen || time.Since(h.ranAt) < h.r.cfg.AfterEvery {
		return
	}
	h.running, h.ranAt, h.startedAt = true, time.Now(), h.gen
	go func() { h.done <- h.r.cfg.AfterPublish(ctx) }()
}

// finished records a run's result; a failure is retried after the
// following passes and logged once.
func (h *hookRunner) finished(err error) {
	h.running = false
	switch {
	case err != nil && !h.failing:
		h.failing = true
		h.r.log.Warn("outbox after-publish hook failed; retried after the next passes", "error", err, "every", h.r.cfg.AfterEvery)
	case err == nil:
		if h.failing {
			h.r.log.Info("outbox after-publish hook recovered")
		}
		h.failing, h.doneGen = false, h.startedAt
	}
}

// wait lets a running hook finish (its context has ended).
func (h *hookRunner) wait() {
	if h.running {
		h.finished(<-h.done)
	}
}

// backoff returns the wait after the failures-th failure in a row: from
// Interval, doubling, at most MaxBackoff, each wait drawn with jitter
// (periodic.NewBackoff), so replicas that failed together in one outage
// retry at different instants.
func (r *Relay) backoff(failures int) time.Duration {
	if failures <= 1 {
		r.retry.Reset()
	}
	return r.retry.NextBackOff()
}

// pendingDoc is the part of an owning document the relay reads.
type pendingDoc struct {
	ID     bson.RawValue    `bson:"_id"`
	Count  int64            `bson:"outboxCount"`
	Outbox map[string]Entry `bson:"outbox"`
}

// pass publishes and removes the pending entries of every collection. It
// stops at the first failure, leaving the rest for the next pass, but
// still measures the backlog of the collections it leaves (one read each),
// so that their gauges do not freeze for the length of an outage. more
// reports that a collection had a full batch.
func (r *Relay) pass(ctx context.Context) (removed int, more bool, err error) {
	for i, coll := range r.colls {
		n, full, err := r.passColl(ctx, coll)
		removed += n
		more = more || full
		if err != nil {
			for _, rest := range r.colls[i+1:] {
				if docs, err := r.pending(ctx, rest); err == nil {
					observeBacklog(rest.Name(), docs)
				}
			}
			return removed, more, err
		}
	}
	return removed, more, nil
}

// publishers bounds the documents published at once in a pass.
const publishers = 16

// pending reads a batch of the documents of coll that have outbox entries.
func (r *Relay) pending(ctx context.Context, coll *mongo.Collection) ([]pendingDoc, error) {
	cur, err := coll.Find(ctx, bson.M{CountField: bson.M{"$gt": 0}}, options.Find().
		SetProjection(bson.M{"_id": 1, Field: 1, CountField: 1}).SetLimit(int64(r.cfg.BatchSize)))
	if err != nil {
		return nil, fmt.Errorf("find outboxes in %s: %w", coll.Name(), err)
	}
	var docs []pendingDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("read outboxes in %s: %w", coll.Name(), err)
	}
	return docs, nil
}

func (r *Relay) passColl(ctx context.Context, coll *mongo.Collection) (removed int, full bool, err error) {
	docs, err := r.pending(ctx, coll)
	if err != nil {
		return 0, false, err
	}
	observeBacklog(coll.Name(), docs)
	// Replicas polling together would otherwise walk the same documents in
	// the same order and publish everything twice; events of different
	// documents have no order to keep.
	rand.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })

	// Documents are published concurrently (a burst of deletions is many
	// documents with one event each); the entries of one document go one
	// after the other, oldest first.
	var (
		mu        sync.Mutex
		published []mongo.WriteModel
		firstErr  error
		wg        sync.WaitGroup
		slots     = make(chan struct{}, publishers)
	)
	for i := range docs {
		d := &docs[i]
		if len(d.Outbox) == 0 {
			if err := r.repairCount(ctx, coll, *d); err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
			}
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			for _, id := range ordered(d.Outbox) {
				e := d.Outbox[id]
				pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
				err := r.pub.Publish(pctx, events.Message{
					ID: id, Subject: e.Subject, Data: []byte(e.Envelope),
					TraceParent: e.TraceParent, TraceState: e.TraceState,
				})
				cancel()
				mu.Lock()
				if err != nil {
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
					return
				}
				// Conditional on the entry: when another relay removed it
				// first, nothing matches and the count is not decremented
				// twice.
				published = append(published, mongo.NewUpdateOneModel().
					SetFilter(bson.M{"_id": d.ID, Field + "." + id: bson.M{"$exists": true}}).
					SetUpdate(bson.M{"$unset": bson.M{Field + "." + id: ""}, "$inc": bson.M{CountField: -1}}))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(published) > 0 {
		res, err := coll.BulkWrite(ctx, published, options.BulkWrite().SetOrdered(false))
		if res != nil {
			removed = int(res.ModifiedCount)
		}
		if err != nil {
			return removed, false, fmt.Errorf("remove published outbox entries from %s: %w", coll.Name(), err)
		}
	}
	if firstErr != nil {
		return removed, false, firstErr
	}
	return removed, len(docs) == r.cfg.BatchSize, nil
}

// repairCount resets outboxCount of a document whose outbox is empty, so
// the relay does not read it forever. Writes through Add and the relay
// keep the two in step; this only undoes a foreign write. The filter on the
// count read makes it a no-op if an entry was added meanwhile.
func (r *Relay) repairCount(ctx context.Context, coll *mongo.Collection, d pendingDoc) error {
	r.log.Warn("outboxCount without outbox entries; resetting", "collection", coll.Name(), "count", d.Count)
	_, err := coll.UpdateOne(ctx, bson.M{"_id": d.ID, CountField: d.Count}, bson.M{"$set": bson.M{CountField: 0}})
	if err != nil {
		return fmt.Errorf("reset outboxCount in %s: %w", coll.Name(), err)
	}
	return nil
}

// ordered returns the entry ids oldest first (ties by id, for a stable
// order): events of one document leave in the order they were recorded.
func ordered(box map[string]Entry) []string {
	ids := make([]string, 0, len(box))
	for id := range box {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := box[a].CreatedAt.Compare(box[b].CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return ids
}

// Start runs the relay in its own goroutine until stop is called; stop
// ends it after one last pass and waits for it. Call stop once the HTTP
// server has finished its in-flight requests, so the events they recorded
// leave now rather than at the next start.
func (r *Relay) Start() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
