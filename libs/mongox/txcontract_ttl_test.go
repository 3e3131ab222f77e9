package mongox_test

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/testkit"
)

// TestTTLIndexExpiresDocuments: the contract of a TTL index, as the
// idempotency keys use it: the index is accepted and listed with its
// expireAfterSeconds, and documents whose indexed date is past go (on
// MongoDB within a TTL monitor pass, 60 s), while others stay.
func TestTTLIndexExpiresDocuments(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	coll := testkit.Mongo(t).Collection("idempotency_keys")
	_, err := coll.InsertMany(ctx, []any{
		bson.D{{Key: "_id", Value: "expired"}, {Key: "expiresAt", Value: time.Now().Add(-time.Minute)}},
		bson.D{{Key: "_id", Value: "live"}, {Key: "expiresAt", Value: time.Now().Add(time.Hour)}},
	})
	testkit.Must(t, err, "insert")
	_, err = coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "expiresAt", Value: 1}},
		Options: options.Index().SetName("expiresAt_ttl").SetExpireAfterSeconds(0)})
	testkit.Must(t, err, "create the TTL index")
	specs, err := coll.Indexes().ListSpecifications(ctx)
	testkit.Must(t, err, "list indexes")
	listed := false
	for _, s := range specs {
		listed = listed || s.Name == "expiresAt_ttl" && s.ExpireAfterSeconds != nil && *s.ExpireAfterSeconds == 0
	}
	if !listed {
		t.Errorf("listIndexes does not show expiresAt_ttl with expireAfterSeconds 0")
	}
	for {
		n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: "expired"}})
		testkit.Must(t, err, "count")
		if n == 0 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the expired document is still there")
		case <-time.After(200 * time.Millisecond):
		}
	}
	n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: "live"}})
	testkit.Must(t, err, "count")
	if n != 1 {
		t.Error("a document that has not expired was removed")
	}
}
