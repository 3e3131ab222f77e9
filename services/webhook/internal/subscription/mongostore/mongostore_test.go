package mongostore_test

import (
	"context"
	"errors"
	"log/slog"
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
	if s, err := after.Get(ctx, "wh_old"); err != nil || s.SecretError == "" || s.Secret != "" {
		t.Errorf("a secret sealed for wh_new read as wh_old's: %q, secretError %q (%v), want it marked as not opening",
			s.Secret, s.SecretError, err)
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

// A secret that does not open (altered, or sealed with a key this replica
// lacks) does not hide the other subscriptions: every one is listed, the
// unreadable ones marked; a change keeps what is stored; a rotation gives
// it a secret that opens.
func TestASecretThatDoesNotOpenIsListedAndMarked(t *testing.T) {
	t.Parallel()
	db := testkit.Mongo(t)
	coll := db.Collection("webhook_subscriptions")
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	sub := func(id string) subscription.Subscription {
		return subscription.Subscription{ID: id, URL: "https://example.org/" + id, EventTypes: []string{"*"},
			Status: subscription.Active, Secret: "whsec_" + id, CreatedAt: at, UpdatedAt: at}
	}
	st := mongostore.New(db, keys(t, key1))
	testkit.Must(t, st.Create(ctx, sub("wh_ok")), "create")
	testkit.Must(t, st.Create(ctx, sub("wh_altered")), "create")
	testkit.Must(t, mongostore.New(db, keys(t, key2)).Create(ctx, sub("wh_otherkey")), "create with another key")
	sealed := raw(t, coll, "wh_altered")["sealedSecret"].(string)
	altered := sealed[:len(sealed)-2] + map[bool]string{true: "AA", false: "BB"}[!strings.HasSuffix(sealed, "AA")]
	_, err := coll.UpdateByID(ctx, "wh_altered", bson.M{"$set": bson.M{"sealedSecret": altered}})
	testkit.Must(t, err, "alter a sealed secret")

	all, err := st.List(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("List = %d subscriptions (%v), want all 3", len(all), err)
	}
	for _, s := range all {
		bad := s.ID != "wh_ok"
		if (s.SecretError != "") != bad || (s.Secret == "") != bad {
			t.Errorf("%s listed with secret %q, secretError %q: want it marked exactly when its secret does not open",
				s.ID, s.Secret, s.SecretError)
		}
	}
	if s, err := st.Get(ctx, "wh_otherkey"); err != nil || !strings.Contains(s.SecretError, "key") {
		t.Errorf("Get of a secret sealed with another key = %q (%v), want it marked, naming the key", s.SecretError, err)
	}

	svc := subscription.NewService(st, subscription.Rules{}, time.Hour, slog.New(slog.DiscardHandler))
	desc := "still here"
	_, err = svc.Update(ctx, "wh_altered", subscription.Changes{Description: &desc})
	testkit.Must(t, err, "change a subscription whose secret does not open")
	if m := raw(t, coll, "wh_altered"); m["sealedSecret"] != altered || m["description"] != desc {
		t.Errorf("after a change: %v, want the description changed and the sealed secret kept as stored", m)
	}
	rotated, err := svc.Rotate(ctx, "wh_otherkey")
	testkit.Must(t, err, "rotate")
	if s, err := st.Get(ctx, "wh_otherkey"); err != nil || s.SecretError != "" || s.Secret != rotated.Secret || s.PreviousSecret != "" {
		t.Errorf("after a rotation: secret %q, previous %q, secretError %q (%v): want the new secret alone, readable",
			s.Secret, s.PreviousSecret, s.SecretError, err)
	}
}
