package mongostore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/webhook/internal/delivery"
	dstore "github.com/doclib/services/webhook/internal/delivery/mongostore"
	"github.com/doclib/services/webhook/internal/keyring"
	"github.com/doclib/services/webhook/internal/subscription"
	"github.com/doclib/services/webhook/internal/subscription/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const (
	key1 = "the-first-webhook-secret-key-32-bytes"
	key2 = "the-second-webhook-secret-key-32-byte"
)

func keys(t *testing.T, current string, others ...string) *keyring.Keyring {
	t.Helper()
	k, err := keyring.New(current, others...)
	testkit.Must(t, err, "keyring")
	return k
}

// raw returns the stored document of id.
func raw(t *testing.T, coll *mongo.Collection, id string) bson.M {
	t.Helper()
	var m bson.M
	testkit.Must(t, coll.FindOne(t.Context(), bson.M{"_id": id}).Decode(&m), "read "+id)
	return m
}

func wantSecrets(t *testing.T, st *mongostore.Store, id, secret, previous string) {
	t.Helper()
	s, err := st.Get(t.Context(), id)
	if err != nil || s.Secret != secret || s.PreviousSecret != previous {
		t.Fatalf("Get(%s) = secrets %q, %q (%v), want %q, %q", id, s.Secret, s.PreviousSecret, err, secret, previous)
	}
}

// Secrets are sealed at rest: a new subscription's at once, one stored in
// plain text before by the start-up pass (and read meanwhile); a rotation
// of the key re-seals them; a key the service lacks stops it, named.
func TestSecretsAreSealedAtRest(t *testing.T) {
	t.Parallel()
	db := testkit.Mongo(t)
	coll := db.Collection("webhook_subscriptions")
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	_, err := coll.InsertOne(ctx, bson.M{"_id": "wh_old", "version": int64(3), "url": "https://example.org/hook",
		"eventTypes": []string{"*"}, "status": "active", "secret": "whsec_plain", "previousSecret": "whsec_prev",
		"previousUntil": at.Add(time.Hour), "createdAt": at, "updatedAt": at})
	testkit.Must(t, err, "store a subscription as before sealing")

	st := mongostore.New(db, keys(t, key1))
	wantSecrets(t, st, "wh_old", "whsec_plain", "whsec_prev")
	testkit.Must(t, st.Create(ctx, subscription.Subscription{ID: "wh_new", URL: "https://example.org/new", EventTypes: []string{"*"},
		Status: subscription.Active, Secret: "whsec_new", CreatedAt: at, UpdatedAt: at}), "Create")
	for _, id := range []string{"wh_new", "wh_old"} {
		if id == "wh_old" {
			n, err := st.SealSecrets(ctx)
			if err != nil || n != 1 {
				t.Fatalf("SealSecrets = %d, %v, want the one plain subscription sealed", n, err)
			}
		}
		m := raw(t, coll, id)
		if _, plain := m["secret"]; plain || !strings.HasPrefix(m["sealedSecret"].(string), "v1.") ||
			strings.Contains(m["sealedSecret"].(string), "whsec_") {
			t.Errorf("%s stored as %v: want its secret sealed only", id, m)
		}
	}
	if m := raw(t, coll, "wh_old"); m["previousSecret"] != nil || m["sealedPreviousSecret"] == nil || m["version"] != int64(3) {
		t.Errorf("wh_old stored as %v: want its previous secret sealed, its version kept", m)
	}
	wantSecrets(t, st, "wh_old", "whsec_plain", "whsec_prev")

	// Rotation: key2 seals, key1 still opens; then key2 alone.
	rotated := mongostore.New(db, keys(t, key2, key1))
	if n, err := rotated.SealSecrets(ctx); err != nil || n != 2 {
		t.Fatalf("SealSecrets after rotating = %d, %v, want both re-sealed", n, err)
	}
	after := mongostore.New(db, keys(t, key2))
	wantSecrets(t, after, "wh_new", "whsec_new", "")
	wantSecrets(t, after, "wh_old", "whsec_plain", "whsec_prev")
	stale := mongostore.New(db, keys(t, key1))
	if _, err := stale.SealSecrets(ctx); err == nil || !strings.Contains(err.Error(), keys(t, key2).CurrentID()) ||
		!strings.Contains(err.Error(), "WEBHOOK_SECRET_KEY") {
		t.Errorf("SealSecrets without the key in use: %v, want an error naming its id", err)
	}

	if _, err := mongostore.New(db, nil).SealSecrets(ctx); err == nil || !strings.Contains(err.Error(), "WEBHOOK_SECRET_KEY") {
		t.Errorf("SealSecrets with no key and sealed secrets stored: %v, want an error naming WEBHOOK_SECRET_KEY", err)
	}

	// A sealed secret copied onto another subscription does not open there.
	_, err = coll.UpdateOne(ctx, bson.M{"_id": "wh_old"}, bson.M{"$set": bson.M{"sealedSecret": raw(t, coll, "wh_new")["sealedSecret"]}})
	testkit.Must(t, err, "copy a sealed secret")
	if _, err := after.Get(ctx, "wh_old"); err == nil {
		t.Error("a secret sealed for wh_new opened as wh_old's")
	}
}

// A subscription and its deliveries go in one transaction: a deletion
// whose cascade fails leaves both, one that succeeds leaves neither.
func TestADeletionTakesTheDeliveriesWithItOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.Mongo(t)
	dl := dstore.New(db, time.Hour)
	testkit.Must(t, dl.EnsureIndexes(ctx), "indexes")
	broken := errors.New("the database went away")
	failing := true
	subs := mongostore.New(db, keys(t, key1), func(ctx context.Context, id string) error {
		if err := dl.Drop(ctx, id); err != nil {
			return err
		}
		if failing {
			return broken
		}
		return nil
	})
	now := time.Now().UTC()
	testkit.Must(t, subs.Create(ctx, subscription.Subscription{ID: "wh_1", URL: "https://example.org/hook",
		EventTypes: []string{"*"}, Status: subscription.Active, Secret: "s", CreatedAt: now}), "create")
	testkit.Must(t, dl.Enqueue(ctx, []delivery.Delivery{{SubscriptionID: "wh_1", EventID: "e1", Type: "tag.deleted",
		Sequence: 1, Body: []byte(`{}`), Status: delivery.Pending, NextAttemptAt: now, EventTime: now, CreatedAt: now}}), "enqueue")

	if err := subs.Delete(ctx, "wh_1"); !errors.Is(err, broken) {
		t.Fatalf("a deletion whose cascade fails: %v, want its error", err)
	}
	if _, err := subs.Get(ctx, "wh_1"); err != nil {
		t.Errorf("the subscription after a failed deletion: %v, want it kept", err)
	}
	if n, err := dl.Backlog(ctx, "wh_1"); err != nil || n != 1 {
		t.Errorf("its backlog after a failed deletion: %d, %v; want 1 (the drop undone)", n, err)
	}

	failing = false
	testkit.Must(t, subs.Delete(ctx, "wh_1"), "delete")
	if _, err := subs.Get(ctx, "wh_1"); !errors.Is(err, subscription.ErrNotFound) {
		t.Errorf("the subscription after its deletion: %v, want ErrNotFound", err)
	}
	if n, err := dl.Backlog(ctx, "wh_1"); err != nil || n != 0 {
		t.Errorf("its backlog after the deletion: %d, %v; want 0", n, err)
	}
	if err := subs.Delete(ctx, "wh_1"); !errors.Is(err, subscription.ErrNotFound) {
		t.Errorf("a second deletion: %v, want ErrNotFound", err)
	}
}
