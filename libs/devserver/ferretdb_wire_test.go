package devserver_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestDevDatabaseAnswersWritesAsMongoDB checks, on both backends, the
// answers a driver gets to the writes MongoDB answers in its own way: an
// unacknowledged write (no answer at all).
func TestDevDatabaseAnswersWritesAsMongoDB(t *testing.T) {
	for _, backend := range []string{"auto", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			db := startDevDatabase(t, backend, "on")
			// One connection: what a w:0 write leaves behind on it is
			// what the next command reads.
			t.Run("unacknowledged write", func(t *testing.T) { unacknowledgedWrite(t, connect(t, db.URI, 1)) })
		})
	}
}

// connect returns a client of its own, with at most poolSize connections
// (0: the driver's default).
func connect(t *testing.T, uri string, poolSize uint64) *mongo.Client {
	t.Helper()
	opts := options.Client().ApplyURI(uri)
	if poolSize > 0 {
		opts.SetMaxPoolSize(poolSize)
	}
	c, err := mongo.Connect(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// unacknowledgedWrite: a w:0 write expects no answer; the next command on
// the same connection must get its own answer, not a stale one.
func unacknowledgedWrite(t *testing.T, client *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := client.Database("wire").Collection("w0")
	_ = coll.Drop(ctx)
	if _, err := coll.InsertOne(ctx, bson.M{"_id": "a", "n": 1}); err != nil {
		t.Fatal(err)
	}
	w0 := client.Database("wire").Collection("w0", options.Collection().SetWriteConcern(writeconcern.Unacknowledged()))
	if _, err := w0.InsertOne(ctx, bson.M{"_id": "b", "n": 2}); err != nil {
		t.Fatal(err)
	}
	// One connection in the pool: these go where the w:0 insert went.
	n, err := coll.CountDocuments(ctx, bson.M{})
	if err != nil || n != 2 {
		t.Errorf("count after a w:0 insert: %d, %v; want 2, <nil>", n, err)
	}
	res, err := coll.UpdateOne(ctx, bson.M{"_id": "a"}, bson.M{"$inc": bson.M{"n": 1}})
	if err != nil || res.MatchedCount != 1 {
		t.Errorf("update after a w:0 insert: %+v, %v; want 1 matched", res, err)
	}
	var d struct{ N int }
	if err := coll.FindOne(ctx, bson.M{"_id": "a"}).Decode(&d); err != nil || d.N != 2 {
		t.Errorf("find after a w:0 insert: n=%d, %v; want 2", d.N, err)
	}
}
