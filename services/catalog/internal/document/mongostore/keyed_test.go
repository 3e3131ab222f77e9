package mongostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// Expired keys are taken off documents by the periodic stale-hold job,
// not left for ever; a live key stays. DropKey leaves a key whose
// document moved on since it was read (another seq) or is held by a
// write, so it never writes over a commit.
func TestExpiredKeysAreTakenOffDocuments(t *testing.T) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	now := time.Now()
	for id, exp := range map[string]time.Time{"old": now.Add(-time.Second), "live": now.Add(time.Hour), "raced": now.Add(-time.Second)} {
		_, err := s.CreateKeyed(ctx, id, document.Key{ID: "k-" + id, Fingerprint: "f", ExpiresAt: exp}, document.Refs{}, link)
		testkit.Must(t, err, "CreateKeyed "+id)
	}
	raced, _, _, err := s.Keyed(ctx, "k-raced")
	testkit.Must(t, err, "Keyed")
	testkit.Must(t, s.DropKey(ctx, "k-raced", raced.Seq+1, now), "DropKey at another seq")
	_, err = s.Documents().UpdateOne(ctx, bson.M{"_id": "raced"}, bson.M{"$set": bson.M{"held": true}})
	testkit.Must(t, err, "hold")
	testkit.Must(t, s.DropKey(ctx, "k-raced", raced.Seq, now), "DropKey of a held document")
	_, err = s.ReleaseStale(ctx)
	testkit.Must(t, err, "ReleaseStale")
	for key, want := range map[string]error{"k-old": document.ErrNotFound, "k-live": nil, "k-raced": nil} {
		if _, _, _, err := s.Keyed(ctx, key); !errors.Is(err, want) {
			t.Errorf("%s after the job: %v, want %v", key, err, want)
		}
	}
}

// A create that died after its placeholder (a keyed one: the key is on
// it) holds the key: a retry's create collides and finds a placeholder
// (the service answers 503 outcome_unknown), until the stale-hold job
// removes it; then the retry creates the document, once.
func TestALeftPlaceholderHoldsItsKeyUntilReleased(t *testing.T) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	key := document.Key{ID: "k", Fingerprint: "f", ExpiresAt: time.Now().Add(time.Hour)}
	left := bson.M{"_id": "dead", "seq": 0, "pending": deadHold()["pending"], "held": true,
		"idemKey": key.ID, "idemFingerprint": key.Fingerprint, "idemExpiresAt": key.ExpiresAt}
	_, err := s.Documents().InsertOne(ctx, left)
	testkit.Must(t, err, "the placeholder a dead create left")
	if _, err := s.CreateKeyed(ctx, "retry", key, document.Refs{}, link); !errors.Is(err, document.ErrKeyTaken) {
		t.Fatalf("the retry's create: %v, want ErrKeyTaken", err)
	}
	if d, _, creating, err := s.Keyed(ctx, key.ID); err != nil || !creating || d.ID != "dead" {
		t.Errorf("Keyed: %s creating %v, %v; want the placeholder, creating", d.ID, creating, err)
	}
	s.SetClock(func() time.Time { return time.Now().Add(time.Minute) })
	if n, err := s.ReleaseStale(ctx); err != nil || n != 1 {
		t.Errorf("ReleaseStale = %d, %v; want the placeholder removed", n, err)
	}
	d, err := s.CreateKeyed(ctx, "retry", key, document.Refs{}, link)
	testkit.Must(t, err, "the retry after the release")
	if held, _, creating, err := s.Keyed(ctx, key.ID); err != nil || creating || held.ID != d.ID {
		t.Errorf("Keyed after the retry: %s creating %v, %v; want %s", held.ID, creating, err, d.ID)
	}
}

// The expired-key sweep, a scan of the collection on the test database,
// runs at most once a minute though ReleaseStale runs every 5 s (review
// final-data, finding 2); a key expired goes at the next sweep.
func TestExpiredKeysAreSweptOnceAMinute(t *testing.T) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	_, err := s.ReleaseStale(ctx)
	testkit.Must(t, err, "the first ReleaseStale")
	_, err = s.CreateKeyed(ctx, "old", document.Key{ID: "k-old", Fingerprint: "f", ExpiresAt: time.Now().Add(-time.Second)}, document.Refs{}, link)
	testkit.Must(t, err, "CreateKeyed")
	_, err = s.ReleaseStale(ctx)
	testkit.Must(t, err, "ReleaseStale within the minute")
	if _, _, _, err := s.Keyed(ctx, "k-old"); err != nil {
		t.Errorf("k-old within the minute: %v, want it still there (no sweep)", err)
	}
	s.SetClock(func() time.Time { return time.Now().Add(61 * time.Second) })
	_, err = s.ReleaseStale(ctx)
	testkit.Must(t, err, "ReleaseStale a minute later")
	if _, _, _, err := s.Keyed(ctx, "k-old"); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("k-old a minute later: %v, want ErrNotFound", err)
	}
}
