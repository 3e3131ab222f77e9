package devserver_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/devserver"
)

// TestDevDatabaseTTLIndexes: a TTL index is accepted and listed with its
// expireAfterSeconds, as on MongoDB; documents whose indexed date is past
// go (within DEV_DATABASE_TTL_INTERVAL), others stay; the TTL outlives a
// restart of the database; a dropped TTL index removes nothing more.
func TestDevDatabaseTTLIndexes(t *testing.T) {
	t.Setenv("DEV_DATABASE_TTL_INTERVAL", "200ms")
	t.Setenv("DEV_DATABASE_BACKEND", "sqlite")
	t.Setenv("DEV_DATABASE_GATE", "on")
	bin, err := devserver.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "doclib-devdb-ttl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	stop, coll := startTTLDatabase(t, bin, dir)
	past, future := time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	insert(t, coll, bson.D{{Key: "_id", Value: "old"}, {Key: "expiresAt", Value: past}},
		bson.D{{Key: "_id", Value: "new"}, {Key: "expiresAt", Value: future}},
		bson.D{{Key: "_id", Value: "text"}, {Key: "expiresAt", Value: "not a date"}},
		bson.D{{Key: "_id", Value: "none"}})
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "expiresAt", Value: 1}},
		Options: options.Index().SetName("expiresAt_ttl").SetExpireAfterSeconds(0)}); err != nil {
		t.Fatalf("create the TTL index: %v", err)
	}
	if got := ttlOf(t, coll, "expiresAt_ttl"); got != "0" {
		t.Errorf("listIndexes: expireAfterSeconds %s, want 0", got)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(5)}); err == nil {
		t.Error("a compound TTL index was accepted; MongoDB refuses it")
	}
	awaitIDs(t, coll, "new", "none", "text")

	stop()
	stop, coll = startTTLDatabase(t, bin, dir)
	defer stop()
	insert(t, coll, bson.D{{Key: "_id", Value: "old2"}, {Key: "expiresAt", Value: past}})
	awaitIDs(t, coll, "new", "none", "text")

	if err := coll.Indexes().DropOne(ctx, "expiresAt_ttl"); err != nil {
		t.Fatal(err)
	}
	insert(t, coll, bson.D{{Key: "_id", Value: "old3"}, {Key: "expiresAt", Value: past}})
	time.Sleep(time.Second) // five monitor passes
	if got := ids(t, coll); len(got) != 4 {
		t.Errorf("after the TTL index was dropped: %v, want old3 kept", got)
	}
}

func startTTLDatabase(t *testing.T, bin, dir string) (stop func(), coll *mongo.Collection) {
	t.Helper()
	addr, err := devserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p, db, err := devserver.FerretDB(context.Background(), bin, addr, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	c := connect(t, db.URI, 0)
	// The client goes first: one left connected to a stopped server
	// would wait for it to end its sessions.
	stop = func() { _ = c.Disconnect(context.Background()); p.Stop() }
	return stop, c.Database("ttl").Collection("keys")
}

func insert(t *testing.T, coll *mongo.Collection, docs ...bson.D) {
	t.Helper()
	for _, d := range docs {
		if _, err := coll.InsertOne(context.Background(), d); err != nil {
			t.Fatal(err)
		}
	}
}

// ttlOf returns the expireAfterSeconds listIndexes shows on index name.
func ttlOf(t *testing.T, coll *mongo.Collection, name string) string {
	t.Helper()
	specs, err := coll.Indexes().ListSpecifications(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if s.Name == name && s.ExpireAfterSeconds != nil {
			return fmt.Sprint(*s.ExpireAfterSeconds)
		}
	}
	return "none"
}

func ids(t *testing.T, coll *mongo.Collection) []string {
	t.Helper()
	cur, err := coll.Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.ID
	}
	return out
}

// awaitIDs waits until coll holds exactly want (sorted), for 10 s at most.
func awaitIDs(t *testing.T, coll *mongo.Collection, want ...string) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if got = ids(t, coll); slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("documents %v, want %v (the expired ones removed)", got, want)
}
