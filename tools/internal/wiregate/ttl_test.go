package wiregate

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

// gateOnFerretDB runs a gate (TTL monitor every interval) in front of an
// in-process FerretDB on SQLite, and returns it and a client of it.
func gateOnFerretDB(t *testing.T, interval time.Duration) (*Gate, *mongo.Client) {
	t.Helper()
	g, uri := gateURI(t, interval)
	return g, clientOf(t, options.Client().ApplyURI(uri))
}

// clientOf connects with opts, disconnecting at the test's end.
func clientOf(t *testing.T, opts *options.ClientOptions) *mongo.Client {
	t.Helper()
	c, err := mongo.Connect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// gateURI runs a gate as gateOnFerretDB does and returns it and its URI.
func gateURI(t *testing.T, interval time.Duration) (*Gate, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "wiregate-ttl-") // short: a Unix socket's path is limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "f.sock")
	f, err := ferretdb.New(&ferretdb.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Handler: "sqlite", SQLiteURL: "file:" + dir + "/",
		Listener: ferretdb.ListenerConfig{Unix: sock}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { _ = f.Run(ctx); done <- struct{}{} }()
	g := &Gate{TTLInterval: interval, Dial: func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(ctx, l); done <- struct{}{} }()
	t.Cleanup(func() { cancel(); <-done; <-done })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("unix", sock); err == nil {
			_ = c.Close()
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	return g, "mongodb://" + l.Addr().String() + "/?directConnection=true"
}

// TestTTLIndexes: FerretDB refuses expireAfterSeconds; through the gate a
// TTL index is made, listed with it, and its expired documents are
// deleted by the monitor; dropping the collection forgets it.
func TestTTLIndexes(t *testing.T) {
	_, c := gateOnFerretDB(t, 100*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	coll := c.Database("d").Collection("keys")
	past := time.Now().Add(-time.Minute)
	if _, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "old"}, {Key: "at", Value: past}},
		bson.D{{Key: "_id", Value: "fresh"}, {Key: "at", Value: time.Now()}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetName("at_ttl").SetExpireAfterSeconds(30)}); err != nil {
		t.Fatalf("TTL index refused: %v", err)
	}
	var specs []bson.M
	cur, err := coll.Indexes().List(ctx)
	if err != nil || cur.All(ctx, &specs) != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range specs {
		if s["name"] == "at_ttl" {
			found = s["expireAfterSeconds"] == int32(30)
		}
	}
	if !found {
		t.Errorf("listIndexes %v, want at_ttl with expireAfterSeconds 30", specs)
	}
	awaitCount(t, coll, 1) // old went, fresh (30 s to go) stays
	if err := coll.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Database(ttlDatabase).Collection(ttlCollection).CountDocuments(ctx, bson.D{}); err != nil || n != 0 {
		t.Errorf("after drop the gate keeps %d TTL indexes (%v), want 0", n, err)
	}
}

func TestTTLIndexSpecificationsChecked(t *testing.T) {
	_, c := gateOnFerretDB(t, time.Hour)
	coll := c.Database("d").Collection("bad")
	for _, m := range []mongo.IndexModel{
		{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(1)},
		{Keys: bson.D{{Key: "a", Value: 1}}, Options: options.Index().SetExpireAfterSeconds(-1)},
	} {
		if _, err := coll.Indexes().CreateOne(context.Background(), m); err == nil || !strings.Contains(err.Error(), "CannotCreateIndex") {
			t.Errorf("%v: %v, want CannotCreateIndex", m.Keys, err)
		}
	}
}

// TestTTLMonitorWaitsForATransaction: the monitor's deletes are writes
// through the gate: they wait while a transaction holds the write side.
func TestTTLMonitorWaitsForATransaction(t *testing.T) {
	g, c := gateOnFerretDB(t, time.Hour)
	ctx := context.Background()
	coll := c.Database("d").Collection("tx")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "at", Value: time.Now().Add(-time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
		Options: options.Index().SetExpireAfterSeconds(0)}); err != nil {
		t.Fatal(err)
	}
	g.locks.all.Lock() // as a transaction under way
	expired := make(chan error, 1)
	go func() { expired <- g.expireTTL(ctx) }()
	select {
	case err := <-expired:
		t.Fatalf("the monitor ran during a transaction (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	g.locks.all.Unlock()
	if err := <-expired; err != nil {
		t.Fatal(err)
	}
	awaitCount(t, coll, 0)
}

func awaitCount(t *testing.T, coll *mongo.Collection, want int64) {
	t.Helper()
	var n int64
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var err error
		if n, err = coll.CountDocuments(context.Background(), bson.D{}); err != nil {
			t.Fatal(err)
		}
		if n == want {
			return
		}
	}
	t.Fatalf("%d documents, want %d", n, want)
}
