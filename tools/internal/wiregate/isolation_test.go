package wiregate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// state returns coll's documents as "_id:n", sorted: what a reader saw
// (each once, whatever a cursor returned twice).
func state(ctx context.Context, coll *mongo.Collection, opts ...*options.FindOptions) (string, error) {
	cur, err := coll.Find(ctx, bson.D{}, opts...)
	if err != nil {
		return "", err
	}
	return drain(ctx, cur)
}

func drain(ctx context.Context, cur *mongo.Cursor) (string, error) {
	defer cur.Close(context.Background())
	seen := map[string]bool{}
	for cur.Next(ctx) {
		n, _ := cur.Current.Lookup("n").AsInt64OK()
		seen[fmt.Sprintf("%s:%d", cur.Current.Lookup("_id").StringValue(), n)] = true
	}
	return fmt.Sprint(slices.Sorted(maps.Keys(seen))), cur.Err()
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// begin starts a transaction on c and returns its context.
func begin(t *testing.T, c *mongo.Client) (mongo.SessionContext, mongo.Session) {
	t.Helper()
	sess, err := c.StartSession()
	must(t, err, "session")
	t.Cleanup(func() { sess.EndSession(context.Background()) })
	must(t, sess.StartTransaction(), "start transaction")
	return mongo.NewSessionContext(context.Background(), sess), sess
}

func set(n int) bson.D { return bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: n}}}} }

// TestReadsOutsideATransactionSeeTheCommittedState: find, count, distinct,
// aggregate and collStats by another session during a transaction answer at once
// with the state before it (in the transaction's own goroutine, which
// would wait for ever were they to wait for its end), and the transaction
// then goes on with its own writes intact.
func TestReadsOutsideATransactionSeeTheCommittedState(t *testing.T) {
	_, c := gateOnFerretDB(t, time.Hour)
	coll := c.Database("d").Collection("iso")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: "seed"}, {Key: "n", Value: 0}},
		bson.D{{Key: "_id", Value: "gone"}, {Key: "n", Value: 0}}})
	must(t, err, "seed")
	before, err := state(ctx, coll)
	must(t, err, "read")
	tctx, sess := begin(t, c)
	_, err = coll.InsertOne(tctx, bson.D{{Key: "_id", Value: "new"}, {Key: "n", Value: 1}})
	must(t, err, "insert in the transaction")
	_, err = coll.UpdateByID(tctx, "seed", set(1))
	must(t, err, "update in the transaction")
	_, err = coll.DeleteOne(tctx, bson.D{{Key: "_id", Value: "gone"}})
	must(t, err, "delete in the transaction")

	checkCommitted := func(when string) {
		t.Helper()
		if got, err := state(ctx, coll); err != nil || got != before {
			t.Errorf("%s: find outside read %s (%v), want %s", when, got, err, before)
		}
		if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 2 {
			t.Errorf("%s: countDocuments outside: %d (%v), want 2", when, n, err)
		}
		if n, err := coll.EstimatedDocumentCount(ctx); err != nil || n != 2 {
			t.Errorf("%s: count outside: %d (%v), want 2", when, n, err)
		}
		if ids, err := coll.Distinct(ctx, "_id", bson.D{}); err != nil || fmt.Sprint(ids) != "[gone seed]" {
			t.Errorf("%s: distinct outside: %v (%v), want [gone seed]", when, ids, err)
		}
		var stats struct{ Count int64 }
		err := coll.Database().RunCommand(ctx, bson.D{{Key: "collStats", Value: coll.Name()}}).Decode(&stats)
		if err != nil || stats.Count != 2 {
			t.Errorf("%s: collStats outside: count %d (%v), want 2", when, stats.Count, err)
		}
	}
	checkCommitted("during the transaction")
	// The transaction reads its own writes, and writes on.
	if got, err := state(tctx, coll); err != nil || got != "[new:1 seed:1]" {
		t.Errorf("the transaction reads %s (%v), want its own writes", got, err)
	}
	_, err = coll.UpdateByID(tctx, "seed", set(2))
	must(t, err, "a second update in the transaction")
	checkCommitted("after its second write")
	must(t, sess.CommitTransaction(ctx), "commit")
	if got, err := state(ctx, coll); err != nil || got != "[new:1 seed:2]" {
		t.Errorf("after the commit: %s (%v), want every write of the transaction", got, err)
	}
}

// TestManyReadersNeverHoldUpATransaction: 50 readers share a pool of 8
// connections with a transaction that keeps writing the collection they
// read; every read sees the state before the transaction or after its
// commit, nothing between, and the transaction commits within its
// lifetime (30 s here: a deadlock would abort it). Slow (under -race,
// seconds): each of its commands waits for a pooled connection behind
// the readers, as it would on MongoDB.
func TestManyReadersNeverHoldUpATransaction(t *testing.T) {
	g, uri := gateURI(t, time.Hour)
	g.Lifetime = 30 * time.Second
	c := clientOf(t, options.Client().ApplyURI(uri).SetMaxPoolSize(8))
	coll := c.Database("d").Collection("iso")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "seed"}, {Key: "n", Value: 0}})
	must(t, err, "seed")
	const writes = 6
	after := []string{fmt.Sprintf("seed:%d", writes)}
	for i := range writes {
		after = append(after, fmt.Sprintf("w%02d:%d", i, i))
	}
	want := map[string]string{"[seed:0]": "before", fmt.Sprint(after): "after"}

	var stop atomic.Bool
	var reads, during atomic.Int64
	var committed atomic.Bool
	var wg sync.WaitGroup
	for i := range 50 {
		batch := int32(100)
		if i%5 == 0 {
			batch = 3 // getMores
		}
		wg.Go(func() {
			for !stop.Load() {
				got, err := state(ctx, coll, options.Find().SetBatchSize(batch))
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				reads.Add(1)
				if want[got] == "" {
					t.Errorf("a reader saw %s: neither the state before the transaction nor after it", got)
					return
				}
				if !committed.Load() {
					during.Add(1)
				}
			}
		})
	}
	tctx, sess := begin(t, c)
	start := time.Now()
	for i := range writes {
		_, err := coll.InsertOne(tctx, bson.D{{Key: "_id", Value: fmt.Sprintf("w%02d", i)}, {Key: "n", Value: i}})
		must(t, err, "insert in the transaction")
		_, err = coll.UpdateByID(tctx, "seed", bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		must(t, err, "update in the transaction")
	}
	must(t, sess.CommitTransaction(ctx), "commit")
	committed.Store(true)
	took := time.Since(start)
	time.Sleep(100 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	t.Logf("transaction of %d writes: %v; %d reads, %d during it", 2*writes, took, reads.Load(), during.Load())
	if during.Load() < 50 {
		t.Errorf("%d reads during the transaction: the test proves little", during.Load())
	}
	if got, err := state(ctx, coll); err != nil || got != fmt.Sprint(after) {
		t.Errorf("after the commit: %s (%v)", got, err)
	}
}

// TestAGetMoreSpansATransaction: cursors opened before a transaction, and
// during it by another session, read on while it writes their documents,
// and see none of its writes.
func TestAGetMoreSpansATransaction(t *testing.T) {
	_, c := gateOnFerretDB(t, time.Hour)
	coll := c.Database("d").Collection("iso")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("d%02d", i)}, {Key: "n", Value: 0}})
	}
	_, err := coll.InsertMany(ctx, docs)
	must(t, err, "seed")
	before, err := state(ctx, coll)
	must(t, err, "read")
	opened := func() *mongo.Cursor {
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(2))
		must(t, err, "find")
		return cur
	}
	first := opened()
	tctx, sess := begin(t, c)
	_, err = coll.UpdateMany(tctx, bson.D{}, set(1))
	must(t, err, "update in the transaction")
	second := opened()
	_, err = coll.InsertOne(tctx, bson.D{{Key: "_id", Value: "d99"}, {Key: "n", Value: 1}})
	must(t, err, "insert in the transaction")
	_, err = coll.DeleteOne(tctx, bson.D{{Key: "_id", Value: "d05"}})
	must(t, err, "delete in the transaction")
	for name, cur := range map[string]*mongo.Cursor{"opened before": first, "opened during": second} {
		if got, err := drain(ctx, cur); err != nil || got != before {
			t.Errorf("a cursor %s the transaction read %s (%v), want %s", name, got, err, before)
		}
	}
	must(t, sess.CommitTransaction(ctx), "commit")
}
