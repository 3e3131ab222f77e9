package mongostore_test

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/libs/validation"
	"github.com/doclib/services/taxonomy/internal/tag"
	"github.com/doclib/services/taxonomy/internal/tag/mongostore"
)

// clocked is a store whose clock the test moves.
func clocked(t *testing.T) (*mongostore.Store, *atomic.Int64) {
	s, _ := newStore(t)
	var now atomic.Int64
	now.Store(at.UnixNano())
	s.SetClock(func() time.Time { return time.Unix(0, now.Load()).UTC() })
	return s, &now
}

func published(t *testing.T, s *mongostore.Store) {
	t.Helper()
	cats, tags := s.Collections()
	for _, coll := range []*mongo.Collection{cats, tags} {
		_, err := coll.UpdateMany(t.Context(), bson.M{}, bson.M{"$unset": bson.M{"outbox": ""}, "$set": bson.M{"outboxCount": 0}})
		testkit.Must(t, err, "mark published")
	}
	testkit.Must(t, s.Sweep(t.Context()), "sweep")
}

// A deleted record keeps its Idempotency-Key for the key's life: a create
// with the key and its request is told the record was deleted, one with
// the key and another request that the key is reused; once the key has
// expired the sweep takes it off (and removes the tombstone), and the key
// makes a new record.
func TestADeletedRecordKeepsItsKeyUntilItExpires(t *testing.T) {
	s, now := clocked(t)
	ctx := t.Context()
	key := &idempotency.Claim{ID: "k", Fingerprint: "f1", ExpiresAt: at.Add(time.Hour)}
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One"), nil), "insert category")
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "c1"), key), "insert tag")
	testkit.Must(t, s.DeleteTag(ctx, "t1", at), "delete tag")
	published(t, s)

	var deleted *tag.KeyDeletedError
	if err := s.InsertTag(ctx, tg("t1", "A", "c1"), key); !errors.As(err, &deleted) || deleted.ID != "t1" || deleted.Kind != "tag" {
		t.Fatalf("the key's request again after the delete: %v, want KeyDeletedError for tag t1", err)
	}
	other := &idempotency.Claim{ID: "k", Fingerprint: "f2", ExpiresAt: at.Add(time.Hour)}
	if err := s.InsertTag(ctx, tg("t2", "B", "c1"), other); !errors.Is(err, tag.ErrKeyReused) {
		t.Fatalf("another request under the key: %v, want ErrKeyReused", err)
	}
	_, tags := s.Collections()
	if n, _ := tags.CountDocuments(ctx, bson.M{}); n != 1 {
		t.Fatalf("%d tag records, want the tombstone only", n)
	}

	now.Store(at.Add(time.Hour).UnixNano()) // the key expires
	published(t, s)
	if n, _ := tags.CountDocuments(ctx, bson.M{}); n != 0 {
		t.Errorf("%d tag records after the key expired and the sweep, want none", n)
	}
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "c1"), key), "the key's request once it expired")
}

// A live record whose key expired gives it up to a new create under it,
// and the sweep takes expired keys off live records.
func TestAnExpiredKeyIsTakenOff(t *testing.T) {
	s, now := clocked(t)
	ctx := t.Context()
	key := &idempotency.Claim{ID: "k", Fingerprint: "f1", ExpiresAt: at.Add(time.Hour)}
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One"), key), "insert c1")
	if err := s.InsertCategory(ctx, cat("c1", "One"), key); !errors.Is(err, tag.ErrMadeBefore) {
		t.Fatalf("the key's request again: %v, want ErrMadeBefore", err)
	}
	testkit.Must(t, s.InsertCategory(ctx, cat("c2", "Two"), &idempotency.Claim{ID: "k2", Fingerprint: "f", ExpiresAt: at.Add(time.Hour)}), "insert c2")
	now.Store(at.Add(2 * time.Hour).UnixNano())
	reused := &idempotency.Claim{ID: "k", Fingerprint: "f2", ExpiresAt: at.Add(3 * time.Hour)}
	testkit.Must(t, s.InsertCategory(ctx, cat("c3", "Three"), reused), "the expired key for another request")
	testkit.Must(t, s.Sweep(ctx), "sweep")
	cats, _ := s.Collections()
	for id, want := range map[string]int64{"c1": 0, "c2": 0, "c3": 1} {
		if n, _ := cats.CountDocuments(ctx, bson.M{"id": id, "idemKey": bson.M{"$exists": true}}); n != want {
			t.Errorf("category %s holds %d keys, want %d", id, n, want)
		}
	}
}

// Records stored before the unique key index existed may share a key (one
// let go after an unknown outcome and used again) or hold expired ones:
// EnsureIndexes makes them fit the index instead of failing, the live
// record keeping a shared key.
func TestEnsureIndexesFitsKeysStoredBefore(t *testing.T) {
	t.Parallel()
	s := mongostore.New(testkit.Mongo(t), testkit.Logger(t))
	ctx := t.Context()
	_, tags := s.Collections()
	later, past := time.Now().Add(time.Hour), time.Now().Add(-time.Hour)
	// Each with its own category and name key, as stored records have: a
	// real MongoDB refuses repeated nulls in the unique category_nameKey
	// index (FerretDB does not).
	record := func(id string, m bson.M) bson.M {
		m["id"], m["nameKey"], m["categoryRef"] = id, id, bson.NewObjectID()
		return m
	}
	_, err := tags.InsertMany(ctx, []any{
		record("~deleted~1", bson.M{"deletedAt": past, "idemKey": "k", "idemFingerprint": "f", "idemExpiresAt": later}),
		record("live", bson.M{"idemKey": "k", "idemFingerprint": "f2", "idemExpiresAt": later}),
		record("old1", bson.M{"idemKey": "old", "idemFingerprint": "f", "idemExpiresAt": past}),
		record("old2", bson.M{"idemKey": "old", "idemFingerprint": "f", "idemExpiresAt": past}),
	})
	testkit.Must(t, err, "insert records")
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes")
	for id, want := range map[string]int64{"~deleted~1": 0, "live": 1, "old1": 0, "old2": 0} {
		if n, _ := tags.CountDocuments(ctx, bson.M{"id": id, "idemKey": bson.M{"$exists": true}}); n != want {
			t.Errorf("tag %s holds %d keys, want %d", id, n, want)
		}
	}
}

// With nothing deleted nor published after it, a keyed tombstone is removed
// and an expired key taken off a live record once the key expires, by the
// sweep run on a timer (the relay sweeps only after it has published).
func TestTheSweepTimerRemovesATombstoneOnceItsKeyExpires(t *testing.T) {
	s, now := clocked(t)
	ctx := t.Context()
	key := &idempotency.Claim{ID: "k", Fingerprint: "f1", ExpiresAt: at.Add(time.Hour)}
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One"), &idempotency.Claim{ID: "kc", Fingerprint: "f", ExpiresAt: at.Add(time.Hour)}), "insert category")
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "c1"), key), "insert tag")
	testkit.Must(t, s.DeleteTag(ctx, "t1", at), "delete tag")
	published(t, s) // the relay's last sweep: the tombstone stays, its key lives
	stop := s.StartSweeping(ctx, slog.New(slog.DiscardHandler), 150*time.Millisecond)
	defer stop()
	now.Store(at.Add(2 * time.Hour).UnixNano()) // the keys expire
	cats, tags := s.Collections()
	var n, k int64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n, _ = tags.CountDocuments(ctx, bson.M{})
		k, _ = cats.CountDocuments(ctx, bson.M{"idemKey": bson.M{"$exists": true}})
		if n == 0 && k == 0 {
			return
		}
	}
	t.Errorf("5 s after the keys expired: %d tag records (want the tombstone removed), %d categories stamped (want 0)", n, k)
}

// A keyed insert that collides on the key, whose holder lets it go before
// the store looks the holder up (another replica took the expired key off,
// or swept the tombstone), is tried again and stores the record: it is not
// answered "name already used", which would be kept as the key's outcome.
func TestAKeyLetGoDuringAnInsertIsNotAnsweredNameTaken(t *testing.T) {
	s, now := clocked(t)
	ctx := t.Context()
	key := &idempotency.Claim{ID: "k", Fingerprint: "f1", ExpiresAt: at.Add(time.Hour)}
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One"), key), "insert c1")
	now.Store(at.Add(2 * time.Hour).UnixNano()) // the key expires
	cats, _ := s.Collections()
	var once sync.Once
	s.SetCollided(func() {
		once.Do(func() { // another replica's key sweep, just then
			_, err := cats.UpdateOne(ctx, bson.M{"id": "c1"}, bson.M{"$unset": bson.M{"idemKey": "", "idemFingerprint": "", "idemExpiresAt": ""}})
			testkit.Must(t, err, "unstamp c1")
		})
	})
	reused := &idempotency.Claim{ID: "k", Fingerprint: "f2", ExpiresAt: at.Add(3 * time.Hour)}
	if err := s.InsertCategory(ctx, cat("c2", "Two"), reused); err != nil {
		t.Fatalf("a create under the key let go meanwhile: %v, want it stored", err)
	}
	if n, _ := cats.CountDocuments(ctx, bson.M{"id": "c2", "idemKey": "k"}); n != 1 {
		t.Errorf("c2 holding the key: %d records, want 1", n)
	}
}

// Of several live records stored before the key index holding one key, the
// first created (by seq, then _id) keeps it, whatever the order the
// database returns them in: replicas starting together keep the same one.
func TestEnsureIndexesKeepsAKeyOnTheFirstCreated(t *testing.T) {
	t.Parallel()
	s := mongostore.New(testkit.Mongo(t), testkit.Logger(t))
	ctx := t.Context()
	cats, _ := s.Collections()
	later := time.Now().Add(time.Hour)
	stamp := func(id string, seq int64) bson.M {
		return bson.M{"id": id, "nameKey": id, "seq": seq, "idemKey": "k", "idemFingerprint": "f", "idemExpiresAt": later}
	}
	// Stored in another order than created.
	_, err := cats.InsertMany(ctx, []any{stamp("third", 3), stamp("first", 1), stamp("second", 2)})
	testkit.Must(t, err, "insert records")
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes")
	for id, want := range map[string]int64{"first": 1, "second": 0, "third": 0} {
		if n, _ := cats.CountDocuments(ctx, bson.M{"id": id, "idemKey": bson.M{"$exists": true}}); n != want {
			t.Errorf("category %s holds %d keys, want %d", id, n, want)
		}
	}
}

// TestACategoryDeletedDuringAKeyedInsertLeavesTheKeyFree: the category goes
// between the tag's insert and its check (the insert meets an expired key
// first, which is when the hook runs). The caller is told 422, not kept;
// the tombstone must not hold the key, or the retry once the category is
// back would be told its tag was created and deleted since (the review
// saw 422, then 409, 409).
func TestACategoryDeletedDuringAKeyedInsertLeavesTheKeyFree(t *testing.T) {
	s, now := clocked(t)
	ctx := t.Context()
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One"), nil), "c1")
	testkit.Must(t, s.InsertTag(ctx, tg("t0", "Zero", "c1"), &idempotency.Claim{ID: "k", Fingerprint: "old", ExpiresAt: at.Add(time.Hour)}), "t0")
	now.Store(at.Add(2 * time.Hour).UnixNano()) // k expires on t0
	var once sync.Once
	s.SetCollided(func() {
		once.Do(func() { testkit.Must(t, s.DeleteCategory(ctx, "c1", time.Now()), "delete c1") })
	})
	svc := tag.NewService(s)
	create := func() error {
		ctx := idempotency.WithClaim(ctx, &idempotency.Claim{ID: "k", Fingerprint: "new", ExpiresAt: at.Add(3 * time.Hour)})
		_, err := svc.CreateTag(ctx, "flu", "Flu", "c1")
		return err
	}
	var invalid validation.Errors
	if err := create(); !errors.As(err, &invalid) {
		t.Fatalf("the first attempt: %v, want 422 unknown category", err)
	}
	if err := create(); !errors.As(err, &invalid) {
		t.Errorf("the retry while the category is gone: %v, want 422 again", err)
	}
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One"), nil), "c1 again")
	if err := create(); err != nil {
		t.Errorf("the retry once the category is back: %v, want the tag created", err)
	}
}
