package mongox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/testkit"
)

func TestMain(m *testing.M) {
	// The development database's TTL monitor runs every 60 s, as MongoDB's;
	// sooner here so the TTL contract test is quick (a real MongoDB, given
	// by TEST_MONGODB_URI, keeps its 60 s).
	if os.Getenv("DEV_DATABASE_TTL_INTERVAL") == "" {
		_ = os.Setenv("DEV_DATABASE_TTL_INTERVAL", "1s")
	}
	testkit.Main(m)
}

// IsUnavailable tells "the database could not be reached" (503, an event
// retried until it is back) from a refused command.
func TestIsUnavailable(t *testing.T) {
	ctx := context.Background()
	down, err := mongox.Connect("mongodb://127.0.0.1:1/")
	testkit.Must(t, err, "connect")
	defer down.Disconnect(ctx)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = down.Database("x").Collection("y").FindOne(short, bson.M{}).Err()
	if err == nil || !mongox.IsUnavailable(err) {
		t.Errorf("error from an unreachable server %v: IsUnavailable = false, want true", err)
	}

	stepdown := mongo.CommandError{Code: 10107, Name: "NotWritablePrimary"}
	if !mongox.IsUnavailable(fmt.Errorf("remove tags: %w", stepdown)) {
		t.Error("NotWritablePrimary: IsUnavailable = false, want true (a replica set changing primaries)")
	}
	// A query out of its maxTimeMS (the development database's gate answers
	// FerretDB's InternalError for it as MongoDB does).
	expired := mongo.CommandError{Code: 50, Name: "MaxTimeMSExpired", Message: "operation exceeded time limit"}
	if !mongox.IsUnavailable(fmt.Errorf("sync: %w", expired)) {
		t.Error("MaxTimeMSExpired: IsUnavailable = false, want true")
	}
	if mongox.IsUnavailable(mongo.CommandError{Code: 1, Name: "InternalError", Message: "some bug"}) {
		t.Error("InternalError: IsUnavailable = true, want false")
	}
	if mongox.IsUnavailable(mongo.CommandError{Code: 2, Name: "BadValue"}) {
		t.Error("BadValue: IsUnavailable = true, want false")
	}

	coll := testkit.Mongo(t).Collection("y")
	_, err = coll.InsertOne(ctx, bson.M{"_id": 1})
	testkit.Must(t, err, "insert")
	_, err = coll.InsertOne(ctx, bson.M{"_id": 1})
	if err == nil || mongox.IsUnavailable(err) || !mongo.IsDuplicateKeyError(err) {
		t.Errorf("duplicate key %v: IsUnavailable = %v, IsDuplicateKeyError = %v; want false, true", err,
			mongox.IsUnavailable(err), mongo.IsDuplicateKeyError(err))
	}
}

// EnsureIndexes is one createIndexes: run again, or by several replicas
// starting together, it leaves the same indexes, a TTL index included;
// an index whose name exists with another key is refused.
func TestEnsureIndexes(t *testing.T) {
	ctx := context.Background()
	coll := testkit.Mongo(t).Collection("ensured")
	models := func() []mongo.IndexModel { // the driver writes into a model's options
		return []mongo.IndexModel{mongox.Index("a", true, "a"), mongox.Index("b_c", false, "b", "c"),
			{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetName("at_ttl").SetExpireAfterSeconds(60)}}
	}
	errs := make(chan error, 3)
	for range 3 {
		go func() { errs <- mongox.EnsureIndexes(ctx, coll, models()...) }()
	}
	for range 3 {
		testkit.Must(t, <-errs, "ensure indexes from three replicas at once")
	}
	testkit.Must(t, mongox.EnsureIndexes(ctx, coll, models()...), "ensure indexes again")
	var specs []bson.M
	cur, err := coll.Indexes().List(ctx)
	testkit.Must(t, err, "list indexes")
	testkit.Must(t, cur.All(ctx, &specs), "list indexes")
	if len(specs) != 4 {
		t.Errorf("indexes %v, want _id_, a, b_c and at_ttl", specs)
	}
	if err := mongox.EnsureIndexes(ctx, coll, mongox.Index("a", true, "z")); err == nil {
		t.Error("an index named as an existing one with another key: no error")
	}
}
