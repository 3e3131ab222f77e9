package mongox_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/testkit"
)

// writeConflict is what MongoDB answers, at once, to a transaction that
// writes a document another open transaction wrote (every catalog write
// increments the one counter document, so any two concurrent writes).
// The gate serialises transactions and never answers it, so it is made
// here.
var writeConflict = mongo.CommandError{Code: 112, Name: "WriteConflict",
	Message: "WriteConflict error: this operation conflicted with another operation",
	Labels:  []string{"TransientTransactionError"}}

// A transient transaction error is retried by InTx (the driver's
// WithTransaction runs fn again); a request holding its transaction for
// an Idempotency-Key must not fail where the same request without a key
// succeeds: on a replica set, any keyed write racing another write would
// answer 500.
func TestAHeldTransactionRetriesATransientErrorAsInTxDoes(t *testing.T) {
	ctx := context.Background()
	db := testkit.Mongo(t)
	testkit.NeedsTransactions(t, db)
	coll := db.Collection("c")
	conflictOnce := func() func(context.Context) error {
		calls := 0
		return func(ctx context.Context) error {
			calls++
			if _, err := coll.InsertOne(ctx, bson.M{"try": calls}); err != nil {
				return err
			}
			if calls == 1 {
				return writeConflict
			}
			return nil
		}
	}
	testkit.Must(t, mongox.InTx(ctx, db.Client(), conflictOnce()), "InTx with one write conflict")

	hctx, held := mongox.Hold(ctx, db.Client())
	err := mongox.InTx(hctx, db.Client(), conflictOnce())
	if err != nil {
		held.Abort(ctx)
		t.Fatalf("the same write in a held transaction: %v; want it retried as InTx retries it", err)
	}
	testkit.Must(t, held.Commit(ctx, func(context.Context) error { return nil }), "commit")
}
