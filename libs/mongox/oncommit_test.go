package mongox_test

import (
	"context"
	"testing"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/testkit"
)

// Work registered on a held transaction's request runs once it commits,
// never when it is aborted; outside any transaction, at once.
func TestOnCommitWaitsForTheHeldTransaction(t *testing.T) {
	ctx := context.Background()
	db := testkit.Mongo(t)
	testkit.NeedsTransactions(t, db)
	ran := 0
	mongox.OnCommit(ctx, func() { ran++ })
	if ran != 1 {
		t.Fatalf("outside a transaction: ran %d times, want at once", ran)
	}
	hctx, held := mongox.Hold(ctx, db.Client())
	mongox.OnCommit(hctx, func() { ran++ })
	if ran != 1 {
		t.Fatal("ran before the held transaction committed")
	}
	testkit.Must(t, held.Commit(ctx, func(context.Context) error { return nil }), "commit")
	if ran != 2 {
		t.Fatalf("after the commit: ran %d times, want 2", ran)
	}
	hctx, held = mongox.Hold(ctx, db.Client())
	testkit.Must(t, mongox.InTx(hctx, db.Client(), func(context.Context) error { return nil }), "joined")
	mongox.OnCommit(hctx, func() { ran++ })
	held.Abort(ctx)
	if ran != 2 {
		t.Fatalf("after an abort: ran %d times, want 2", ran)
	}
}
