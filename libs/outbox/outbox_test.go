package outbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
)

// recorder is a Publisher that keeps what it was given and fails while
// down is set.
type recorder struct {
	mu   sync.Mutex
	ids  []string
	down bool
}

func (r *recorder) Publish(_ context.Context, m events.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.down {
		return errors.New("nats down")
	}
	r.ids = append(r.ids, m.ID)
	return nil
}

func (r *recorder) published() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

func (r *recorder) setDown(down bool) {
	r.mu.Lock()
	r.down = down
	r.mu.Unlock()
}

func newEvents(t *testing.T, n int) []events.Event {
	t.Helper()
	evs := make([]events.Event, n)
	for i := range evs {
		ev, err := events.New(context.Background(), "/test", events.DocumentDeleted,
			events.DocumentDeletedData{DocumentID: "d"}, time.Now().Truncate(time.Millisecond))
		testkit.Must(t, err, "new event")
		evs[i] = ev
	}
	return evs
}

func ids(evs []events.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.ID
	}
	return out
}

// newOutbox returns an outbox in a fresh database with its relay running
// every interval.
func newOutbox(t *testing.T, pub outbox.Publisher, interval time.Duration) (*outbox.Outbox, func(context.Context, ...events.Event) error) {
	t.Helper()
	db := testkit.Mongo(t)
	testkit.NeedsTransactions(t, db)
	ob := outbox.New(db, testkit.Logger(t))
	testkit.Must(t, ob.EnsureIndexes(context.Background()), "indexes")
	stop := ob.Start(pub, outbox.RelayConfig{Interval: interval})
	t.Cleanup(stop)
	add := func(ctx context.Context, evs ...events.Event) error {
		return mongox.InTx(ctx, db.Client(), func(ctx context.Context) error { return ob.Add(ctx, evs...) })
	}
	return ob, add
}

// Events leave, in the order they were added, within milliseconds of
// their transaction's commit; those of a transaction that failed never.
func TestAnEventLeavesWhenItsTransactionCommits(t *testing.T) {
	pub := &recorder{}
	ob, add := newOutbox(t, pub, time.Hour) // what leaves sooner was woken by the commit
	db := ob.Collection().Database()
	lost := newEvents(t, 1)
	err := mongox.InTx(context.Background(), db.Client(), func(ctx context.Context) error {
		if err := ob.Add(ctx, lost...); err != nil {
			return err
		}
		return errors.New("the change failed")
	})
	if err == nil {
		t.Fatal("a failing transaction committed")
	}
	evs := newEvents(t, 5)
	start := time.Now()
	testkit.Must(t, add(context.Background(), evs...), "add")
	waitFor(t, 2*time.Second, "the events published", func() bool { return len(pub.published()) == len(evs) })
	if took := time.Since(start); took > time.Second {
		t.Errorf("published %s after the commit, want milliseconds", took)
	}
	if got := pub.published(); !slices.Equal(got, ids(evs)) {
		t.Errorf("published %v, want %v in that order", got, ids(evs))
	}
	waitFor(t, 2*time.Second, "the outbox emptied", func() bool {
		n, err := ob.Collection().CountDocuments(context.Background(), bson.M{})
		return err == nil && n == 0
	})
}

// While the stream is unreachable the events wait in the outbox, and they
// all leave, in order, once it is back.
func TestEventsWaitWhileTheStreamIsDown(t *testing.T) {
	pub := &recorder{down: true}
	ob, add := newOutbox(t, pub, 20*time.Millisecond)
	first, second := newEvents(t, 2), newEvents(t, 2)
	testkit.Must(t, add(context.Background(), first...), "add")
	testkit.Must(t, add(context.Background(), second...), "add")
	time.Sleep(200 * time.Millisecond)
	if n, _ := ob.Collection().CountDocuments(context.Background(), bson.M{}); n != 4 || len(pub.published()) != 0 {
		t.Fatalf("while down: %d entries kept, %d published; want 4, 0", n, len(pub.published()))
	}
	pub.setDown(false)
	want := append(ids(first), ids(second)...)
	waitFor(t, 5*time.Second, "the events published", func() bool { return len(pub.published()) == len(want) })
	if got := pub.published(); !slices.Equal(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
}

// Events kept inside records by the former outbox are moved to the
// collection and published once.
func TestLegacyEventsAreMovedAndPublished(t *testing.T) {
	pub := &recorder{}
	ob, _ := newOutbox(t, pub, time.Hour)
	db := ob.Collection().Database()
	evs := newEvents(t, 2)
	// As the former outbox wrote them: each event under outbox.<id>, with
	// a count.
	set := bson.M{"deletedAt": time.Now()}
	for _, ev := range evs {
		env, err := json.Marshal(ev.Envelope)
		testkit.Must(t, err, "envelope")
		set["outbox."+ev.ID] = bson.M{"subject": ev.Type, "envelope": string(env), "createdAt": ev.Time}
	}
	update := bson.M{"$set": set, "$inc": bson.M{"outboxCount": len(evs)}}
	things := db.Collection("things")
	_, err := things.UpdateOne(context.Background(), bson.M{"_id": "x"}, update, options.UpdateOne().SetUpsert(true))
	testkit.Must(t, err, "legacy write")
	n, err := ob.MoveLegacy(context.Background(), db.Client(), things)
	testkit.Must(t, err, "move")
	if n != 2 {
		t.Fatalf("moved %d, want 2", n)
	}
	waitFor(t, 2*time.Second, "the events published", func() bool { return len(pub.published()) == 2 })
	if left, _ := things.CountDocuments(context.Background(), bson.M{"outboxCount": bson.M{"$exists": true}}); left != 0 {
		t.Errorf("%d records still carry an outbox", left)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
