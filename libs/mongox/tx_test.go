package mongox_test

import (
	"context"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/testkit"
)

// InTx commits fn's writes together, undoes them when fn fails, and runs
// the OnCommit work only after a commit.
func TestInTxCommitsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db := testkit.Mongo(t)
	testkit.NeedsTransactions(t, db)
	a, b := db.Collection("a"), db.Collection("b")
	committed := 0
	err := mongox.InTx(ctx, db.Client(), func(ctx context.Context) error {
		if _, err := a.InsertOne(ctx, bson.M{"_id": 1}); err != nil {
			return err
		}
		mongox.OnCommit(ctx, func() { committed++ })
		_, err := b.InsertOne(ctx, bson.M{"_id": 1})
		return err
	})
	testkit.Must(t, err, "commit")
	boom := errors.New("boom")
	err = mongox.InTx(ctx, db.Client(), func(ctx context.Context) error {
		if _, err := a.InsertOne(ctx, bson.M{"_id": 2}); err != nil {
			return err
		}
		mongox.OnCommit(ctx, func() { committed++ })
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing fn: %v, want boom", err)
	}
	na, _ := a.CountDocuments(ctx, bson.M{})
	nb, _ := b.CountDocuments(ctx, bson.M{})
	if na != 1 || nb != 1 || committed != 1 {
		t.Errorf("after one commit and one failure: a %d, b %d, hooks %d; want 1, 1, 1", na, nb, committed)
	}
}

// A held transaction keeps what the request's InTx calls wrote until its
// Commit, which adds its last write; Abort undoes them all.
func TestHeldTransactionCommitsWithItsLastWrite(t *testing.T) {
	ctx := context.Background()
	db := testkit.Mongo(t)
	testkit.NeedsTransactions(t, db)
	c := db.Collection("c")
	write := func(ctx context.Context, id int) error {
		return mongox.InTx(ctx, db.Client(), func(ctx context.Context) error {
			_, err := c.InsertOne(ctx, bson.M{"_id": id})
			return err
		})
	}
	hctx, held := mongox.Hold(ctx, db.Client())
	testkit.Must(t, write(hctx, 1), "joined write")
	// A read outside the open transaction, in the goroutine that commits
	// it later, is answered at once without its writes.
	if n, err := c.CountDocuments(ctx, bson.M{}); err != nil || n != 0 {
		t.Fatalf("a held write is seen before the commit (%d documents, %v)", n, err)
	}
	testkit.Must(t, held.Commit(ctx, func(ctx context.Context) error {
		_, err := c.InsertOne(ctx, bson.M{"_id": 2})
		return err
	}), "commit")
	if n, _ := c.CountDocuments(ctx, bson.M{}); n != 2 {
		t.Fatalf("after the commit: %d documents, want 2", n)
	}

	hctx, held = mongox.Hold(ctx, db.Client())
	testkit.Must(t, write(hctx, 3), "joined write")
	held.Abort(ctx)
	if n, _ := c.CountDocuments(ctx, bson.M{}); n != 2 {
		t.Fatalf("after an abort: %d documents, want 2", n)
	}
}

// An InTx inside another's fn joins it: one commit, or nothing.
func TestANestedInTxJoinsTheOuterTransaction(t *testing.T) {
	ctx := context.Background()
	db := testkit.Mongo(t)
	testkit.NeedsTransactions(t, db)
	c := db.Collection("n")
	boom := errors.New("boom")
	err := mongox.InTx(ctx, db.Client(), func(ctx context.Context) error {
		if err := mongox.InTx(ctx, db.Client(), func(ctx context.Context) error {
			_, err := c.InsertOne(ctx, bson.M{"_id": 1})
			return err
		}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("outer: %v, want boom", err)
	}
	if n, _ := c.CountDocuments(ctx, bson.M{}); n != 0 {
		t.Errorf("the nested write outlived the outer transaction's failure (%d documents)", n)
	}
}
