package devserver_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestDevDatabaseIsAReplicaSet: every URI form a service or test may be
// given reaches the gate as a replica set's primary and runs a
// transaction; a transaction left open longer than its lifetime is
// aborted, undone, and stops holding other writes. (The transaction
// contract itself is libs/mongox's, run against this database and MongoDB.)
func TestDevDatabaseIsAReplicaSet(t *testing.T) {
	t.Setenv("DEV_DATABASE_TRANSACTION_LIFETIME", "1s")
	db := startDevDatabase(t, "auto", "on")
	plain := strings.TrimSuffix(db.URI, "/")
	for i, uri := range []string{
		plain + "/",
		plain + "/?replicaSet=rs0",
		plain + "/?directConnection=true",
		strings.Replace(plain, "127.0.0.1", "localhost", 1) + "/",
	} {
		t.Run(uri, func(t *testing.T) { transactionThrough(t, connect(t, uri, 0), fmt.Sprint(i)) })
	}
	t.Run("lifetime", func(t *testing.T) { transactionOutlivesItsLifetime(t, connect(t, db.URI, 0)) })
}

func transactionThrough(t *testing.T, c *mongo.Client, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var hello struct {
		SetName           string `bson:"setName"`
		IsWritablePrimary bool   `bson:"isWritablePrimary"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil {
		t.Fatal(err)
	}
	if hello.SetName != "rs0" || !hello.IsWritablePrimary {
		t.Errorf("hello %+v, want the primary of rs0", hello)
	}
	coll := c.Database("txn").Collection("uri")
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if _, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		return coll.InsertOne(ctx, bson.D{{Key: "_id", Value: id}})
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}); err != nil || n != 1 {
		t.Fatalf("after the commit: %d documents (%v), want 1", n, err)
	}
}

func transactionOutlivesItsLifetime(t *testing.T, c *mongo.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	coll := c.Database("txn").Collection("lifetime")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "seed"}}); err != nil {
		t.Fatal(err)
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_ = sess.StartTransaction()
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "late"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "other"}}); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("a write outside waited %v for a transaction whose lifetime is 1s", waited)
	}
	err = sess.CommitTransaction(ctx)
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(251) || !se.HasErrorLabel("TransientTransactionError") {
		t.Errorf("committing after the lifetime: %v, want NoSuchTransaction labelled TransientTransactionError", err)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: "late"}}); n != 0 {
		t.Error("the expired transaction's insert is there")
	}
}
