package wiregate

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"
	"go.mongodb.org/mongo-driver/mongo/options"
)

func indexModel(name string, unique bool, keys ...string) mongo.IndexModel {
	d := bson.D{}
	for _, k := range keys {
		d = append(d, bson.E{Key: k, Value: 1})
	}
	return mongo.IndexModel{Keys: d, Options: options.Index().SetName(name).SetUnique(unique)}
}

func listed(t *testing.T, coll *mongo.Collection) map[string]bson.M {
	t.Helper()
	var specs []bson.M
	cur, err := coll.Indexes().List(context.Background())
	if err != nil || cur.All(context.Background(), &specs) != nil {
		t.Fatal(err)
	}
	out := map[string]bson.M{}
	for _, s := range specs {
		out[s["name"].(string)] = s
	}
	return out
}

// TestCreateIndexesAsMongoDB: creating indexes that exist (FerretDB v1
// panics on it) is a no-op, as on MongoDB, TTL indexes included; services
// starting together all succeed; an index new beside existing ones is
// made; a conflict with an existing index is MongoDB's error.
func TestCreateIndexesAsMongoDB(t *testing.T) {
	_, c := gateOnFerretDB(t, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	coll := c.Database("d").Collection("idx")
	// Each call its own models: the driver writes into their options.
	models := func() []mongo.IndexModel {
		ttl := mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}}, Options: options.Index().SetName("at_ttl").SetExpireAfterSeconds(30)}
		return []mongo.IndexModel{indexModel("a", true, "a"), indexModel("b_c", false, "b", "c"), ttl}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := coll.Indexes().CreateMany(ctx, models())
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("creating indexes from several clients at once: %v", err)
		}
	}
	if _, err := coll.Indexes().CreateMany(ctx, models()); err != nil {
		t.Fatalf("creating existing indexes again: %v", err)
	}
	if _, err := coll.Indexes().CreateMany(ctx, append(models(), indexModel("d", false, "d"))); err != nil {
		t.Fatalf("an index new beside existing ones: %v", err)
	}
	specs := listed(t, coll)
	if len(specs) != 5 || specs["at_ttl"]["expireAfterSeconds"] != int32(30) || specs["d"] == nil {
		t.Errorf("indexes %v, want _id_, a, b_c, at_ttl (TTL 30 s) and d", specs)
	}
	for _, cc := range []struct {
		what  string
		model mongo.IndexModel
		code  int32
	}{
		{"same name, other key", indexModel("a", true, "z"), codeIndexKeySpecsConflict},
		{"same name, other options", indexModel("a", false, "a"), codeIndexOptionsConflict},
		{"same index, other name", indexModel("a2", true, "a"), codeIndexOptionsConflict},
		{"same TTL index, other seconds", mongo.IndexModel{Keys: bson.D{{Key: "at", Value: 1}},
			Options: options.Index().SetName("at_ttl").SetExpireAfterSeconds(60)}, codeIndexOptionsConflict},
	} {
		_, err := coll.Indexes().CreateOne(ctx, cc.model)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != cc.code {
			t.Errorf("%s: %v, want code %d", cc.what, err, cc.code)
		}
	}
	if n := len(listed(t, coll)); n != 5 {
		t.Errorf("%d indexes after the conflicts, want 5", n)
	}
}
