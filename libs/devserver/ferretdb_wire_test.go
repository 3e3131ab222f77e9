package devserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// TestDevDatabaseAnswersWritesAsMongoDB checks, on both backends, the
// answers a driver gets to the writes MongoDB answers in its own way: an
// unacknowledged write (no answer at all), and bulk writes (counts,
// indexes and errors per statement, of any size).
func TestDevDatabaseAnswersWritesAsMongoDB(t *testing.T) {
	for _, backend := range []string{"auto", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			db := startDevDatabase(t, backend, "on")
			// One connection: what a w:0 write leaves behind on it is
			// what the next command reads.
			t.Run("unacknowledged write", func(t *testing.T) { unacknowledgedWrite(t, connect(t, db.URI, 1)) })
			t.Run("bulk update of 600", func(t *testing.T) { bigBulkUpdate(t, connect(t, db.URI, 0), db.URI) })
			t.Run("bulk update with a duplicate key", func(t *testing.T) { bulkDuplicateKey(t, connect(t, db.URI, 0)) })
		})
	}
}

// TestDevDatabaseAnswersInAsMongoDB: the gate splits an $in of a few
// values into one equality per value (wiregate/in.go); the answers are
// MongoDB's: each document once, the rest of the filter and the
// projection kept, counts of an update of many documents by id.
func TestDevDatabaseAnswersInAsMongoDB(t *testing.T) {
	for _, backend := range []string{"auto", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			db := startDevDatabase(t, backend, "on")
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			coll := connect(t, db.URI, 0).Database("wire").Collection("in")
			docs := []any{
				bson.M{"_id": "a", "tags": bson.A{"x", "y"}, "n": 1},
				bson.M{"_id": "b", "tags": bson.A{"y"}, "n": 2},
				bson.M{"_id": "c", "tags": bson.A{}, "n": 3},
			}
			var many bson.A
			for i := range 20 {
				id := fmt.Sprintf("p%02d", i)
				docs, many = append(docs, bson.M{"_id": id, "tags": bson.A{"z"}, "n": 0}), append(many, id)
			}
			if _, err := coll.InsertMany(ctx, docs); err != nil {
				t.Fatal(err)
			}
			if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "tags", Value: 1}}}); err != nil {
				t.Fatal(err)
			}
			find := func(filter bson.M, opts ...options.Lister[options.FindOptions]) []string {
				t.Helper()
				cur, err := coll.Find(ctx, filter, opts...)
				if err != nil {
					t.Fatal(err)
				}
				var got []struct {
					ID   string   `bson:"_id"`
					Tags []string `bson:"tags"`
				}
				if err := cur.All(ctx, &got); err != nil {
					t.Fatal(err)
				}
				var out []string
				for _, d := range got {
					out = append(out, fmt.Sprintf("%s%v", d.ID, d.Tags))
				}
				slices.Sort(out)
				return out
			}
			for _, c := range []struct {
				name   string
				filter bson.M
				opts   []options.Lister[options.FindOptions]
				want   string
			}{
				{"an array field, a document matching two values", bson.M{"tags": bson.M{"$in": bson.A{"x", "y"}}}, nil, "a[x y] b[y]"},
				{"ids, an unknown one, the rest of the filter", bson.M{"_id": bson.M{"$in": bson.A{"a", "c", "zz"}}, "n": bson.M{"$gte": 1}}, nil, "a[x y] c[]"},
				{"a projection", bson.M{"_id": bson.M{"$in": bson.A{"b"}}}, []options.Lister[options.FindOptions]{options.Find().SetProjection(bson.M{"tags": 0})}, "b[]"},
				{"more values than are split", bson.M{"_id": bson.M{"$in": append(bson.A{"a"}, many...)}, "n": 1}, nil, "a[x y]"},
			} {
				if got := strings.Join(find(c.filter, c.opts...), " "); got != c.want {
					t.Errorf("%s: found %s, want %s", c.name, got, c.want)
				}
			}
			res, err := coll.UpdateMany(ctx, bson.M{"_id": bson.M{"$in": bson.A{"a", "b", "c", "zz"}}, "tags": "y"}, bson.M{"$inc": bson.M{"n": 10}})
			if err != nil || res.MatchedCount != 2 || res.ModifiedCount != 2 {
				t.Errorf("UpdateMany on ids: %+v, %v; want 2 matched, 2 modified", res, err)
			}
			if got := strings.Join(find(bson.M{"n": bson.M{"$gt": 10}}), " "); got != "a[x y] b[y]" {
				t.Errorf("after the update, n > 10 on %s, want a and b", got)
			}
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

// bigBulkUpdate: MongoDB takes up to 100,000 statements in one update
// command; 600 must neither hang nor stop the next client's writes.
func bigBulkUpdate(t *testing.T, client *mongo.Client, uri string) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	coll := client.Database("wire").Collection("bulk")
	_ = coll.Drop(ctx)
	const n = 600
	docs := make([]any, n)
	models := make([]mongo.WriteModel, n)
	for i := range n {
		// String ids: the only filter FerretDB sends to SQLite.
		id := fmt.Sprint(i)
		docs[i] = bson.M{"_id": id, "n": 0}
		models[i] = mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": id}).SetUpdate(bson.M{"$inc": bson.M{"n": 1}})
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// Not a timing assertion: before the gate sent statements one by one,
	// this bulk never ended.
	tctx, tcancel := context.WithTimeout(ctx, 60*time.Second)
	defer tcancel()
	res, err := coll.BulkWrite(tctx, models)
	if err != nil || res.MatchedCount != n || res.ModifiedCount != n {
		t.Errorf("bulk of %d updates: %+v, %v; want %d matched and modified", n, res, err, n)
	}
	other := connect(t, uri, 0)
	octx, ocancel := context.WithTimeout(ctx, 20*time.Second)
	defer ocancel()
	if _, err := other.Database("wire").Collection("other").InsertOne(octx, bson.M{"x": 1}); err != nil {
		t.Errorf("another client's insert after the bulk: %v", err)
	}
}

// bulkDuplicateKey: a statement that breaks a unique index is a write
// error of that statement (DuplicateKey, with its index); an ordered bulk
// stops there, an unordered one goes on; the counts are of what was done.
func bulkDuplicateKey(t *testing.T, client *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := client.Database("wire").Collection("dup")
	_ = coll.Drop(ctx)
	_, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "k", Value: 1}}, Options: options.Index().SetUnique(true)})
	if err != nil {
		t.Fatal(err)
	}
	for _, ordered := range []bool{true, false} {
		t.Run(fmt.Sprintf("ordered=%v", ordered), func(t *testing.T) {
			if _, err := coll.DeleteMany(ctx, bson.M{}); err != nil {
				t.Fatal(err)
			}
			if _, err := coll.InsertMany(ctx, []any{bson.M{"_id": 1, "k": "a"}, bson.M{"_id": 2, "k": "b"}, bson.M{"_id": 3, "k": "c"}}); err != nil {
				t.Fatal(err)
			}
			res, err := coll.BulkWrite(ctx, []mongo.WriteModel{
				mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": 1}).SetUpdate(bson.M{"$set": bson.M{"x": 1}}),
				mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": 2}).SetUpdate(bson.M{"$set": bson.M{"k": "a"}}),
				mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": 3}).SetUpdate(bson.M{"$set": bson.M{"x": 1}}),
				mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": 4}).SetUpdate(bson.M{"$set": bson.M{"k": "d"}}).SetUpsert(true),
			}, options.BulkWrite().SetOrdered(ordered))
			var bwe mongo.BulkWriteException
			if !mongo.IsDuplicateKeyError(err) || !errorsAs(err, &bwe) || len(bwe.WriteErrors) != 1 || bwe.WriteErrors[0].Index != 1 {
				t.Fatalf("got %v; want a bulk write error with DuplicateKey for statement 1 alone", err)
			}
			wantMatched, wantUpserted := int64(1), map[int64]any(nil)
			if !ordered {
				wantMatched, wantUpserted = 2, map[int64]any{3: int32(4)}
			}
			if res == nil || res.MatchedCount != wantMatched || fmt.Sprint(res.UpsertedIDs) != fmt.Sprint(wantUpserted) {
				t.Errorf("result %+v; want %d matched, upserted %v", res, wantMatched, wantUpserted)
			}
			x, err := coll.CountDocuments(ctx, bson.M{"x": 1})
			if err != nil || x != wantMatched {
				t.Errorf("%d documents updated, %v; want %d", x, err, wantMatched)
			}
		})
	}
}

func errorsAs(err error, target *mongo.BulkWriteException) bool {
	e, ok := err.(mongo.BulkWriteException)
	if ok {
		*target = e
	}
	return ok
}
