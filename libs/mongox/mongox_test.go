package mongox_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

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
