package devserver_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/devserver"
)

// startDevDatabase runs the ferretdb binary with the given backend and
// gate, for this test only.
func startDevDatabase(t *testing.T, backend, gate string) devserver.Database {
	t.Helper()
	t.Setenv("DEV_DATABASE_BACKEND", backend)
	t.Setenv("DEV_DATABASE_GATE", gate)
	bin, err := devserver.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := devserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): its parent is private to this user, and PostgreSQL,
	// run as "postgres" when the tests run as root, could not enter it.
	dir, err := os.MkdirTemp("", "doclib-devdb-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p, db, err := devserver.FerretDB(context.Background(), bin, addr, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	t.Logf("development database: %s, gate %s (%s)", db.Backend, db.Gate, db.Reason)
	return db
}

// raceOps is how many writes each of the two clients makes per kind.
const raceOps = 100

// lostWrites runs, for each kind of write the stores rely on, two
// independent clients writing the same document at once, and returns how
// many writes each kind lost (0 on a server where a single-document write
// is atomic, as on MongoDB).
func lostWrites(t *testing.T, uri string) map[string]int {
	t.Helper()
	ctx := context.Background()
	var colls [2]*mongo.Collection
	for i := range colls {
		// Two clients, two connection pools: as two service replicas.
		c, err := mongo.Connect(options.Client().ApplyURI(uri))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
		colls[i] = c.Database("atomicity").Collection("race")
	}
	c := colls[0]
	_ = c.Drop(ctx)
	both := func(write func(client int, c *mongo.Collection, k int) error) {
		var wg sync.WaitGroup
		for i, c := range colls {
			wg.Go(func() {
				for k := range raceOps {
					if err := write(i, c, k); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	var all bson.A
	for i := range 2 {
		for k := range raceOps {
			all = append(all, fmt.Sprintf("%d-%d", i, k))
		}
	}
	must := func(_ any, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.InsertMany(ctx, []any{
		bson.M{"_id": "inc", "n": 0},
		bson.M{"_id": "addToSet", "s": bson.A{}},
		bson.M{"_id": "pullAll", "a": all},
		bson.M{"_id": "version", "v": 0},
	}))

	lost := map[string]int{}

	both(func(_ int, c *mongo.Collection, _ int) error {
		_, err := c.UpdateOne(ctx, bson.M{"_id": "inc"}, bson.M{"$inc": bson.M{"n": 1}})
		return err
	})
	var inc struct{ N int }
	must(nil, c.FindOne(ctx, bson.M{"_id": "inc"}).Decode(&inc))
	lost["$inc"] = 2*raceOps - inc.N

	both(func(i int, c *mongo.Collection, k int) error {
		_, err := c.UpdateOne(ctx, bson.M{"_id": "addToSet"}, bson.M{"$addToSet": bson.M{"s": fmt.Sprintf("%d-%d", i, k)}})
		return err
	})
	var set struct{ S []string }
	must(nil, c.FindOne(ctx, bson.M{"_id": "addToSet"}).Decode(&set))
	lost["$addToSet"] = 2*raceOps - len(set.S)

	both(func(i int, c *mongo.Collection, k int) error {
		_, err := c.UpdateOne(ctx, bson.M{"_id": "pullAll"}, bson.M{"$pullAll": bson.M{"a": bson.A{fmt.Sprintf("%d-%d", i, k)}}})
		return err
	})
	var pull struct{ A []string }
	must(nil, c.FindOne(ctx, bson.M{"_id": "pullAll"}).Decode(&pull))
	lost["$pullAll"] = len(pull.A) // each left over is a pull undone

	// Optimistic concurrency as the stores do it: read the version, write
	// only if it is still the one read. Every success must count.
	var mu sync.Mutex
	successes := 0
	both(func(_ int, c *mongo.Collection, _ int) error {
		var d struct{ V int }
		if err := c.FindOne(ctx, bson.M{"_id": "version"}).Decode(&d); err != nil {
			return err
		}
		res, err := c.UpdateOne(ctx, bson.M{"_id": "version", "v": d.V}, bson.M{"$set": bson.M{"v": d.V + 1}})
		if err != nil {
			return err
		}
		if res.ModifiedCount == 1 {
			mu.Lock()
			successes++
			mu.Unlock()
		}
		return nil
	})
	var ver struct{ V int }
	must(nil, c.FindOne(ctx, bson.M{"_id": "version"}).Decode(&ver))
	lost["version check"] = successes - ver.V
	return lost
}

// TestDevDatabaseWritesAreAtomic proves the development database keeps
// MongoDB's promise that one document's writes never undo each other, on
// both backends (PostgreSQL when the machine has it; SQLite forced).
func TestDevDatabaseWritesAreAtomic(t *testing.T) {
	for _, backend := range []string{"auto", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			db := startDevDatabase(t, backend, "on")
			if backend == "sqlite" && db.Backend != "sqlite" {
				t.Fatalf("DEV_DATABASE_BACKEND=sqlite gave %s", db.Backend)
			}
			for kind, n := range lostWrites(t, db.URI) {
				if n != 0 {
					t.Errorf("%s: %d of %d concurrent writes lost behind the gate", kind, n, 2*raceOps)
				}
			}
		})
	}
}

// TestWithoutTheGateWritesAreLost shows that the test above has teeth:
// bare FerretDB loses concurrent writes to one document (FerretDB issue
// #3040). Should FerretDB ever stop losing them, this fails, and the gate
// may go.
func TestWithoutTheGateWritesAreLost(t *testing.T) {
	db := startDevDatabase(t, "auto", "off")
	total := 0
	for attempt := 0; attempt < 3 && total == 0; attempt++ {
		for kind, n := range lostWrites(t, db.URI) {
			t.Logf("without the gate, %s lost %d of %d", kind, n, 2*raceOps)
			total += n
		}
	}
	if total == 0 {
		t.Fatal("no concurrent write was lost without the gate in 3 attempts: does FerretDB apply updates atomically now?")
	}
}
