package httpapi_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	idemstore "github.com/doclib/libs/idempotency/mongostore"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/taxonomy/internal/httpapi"
	"github.com/doclib/services/taxonomy/internal/tag"
	"github.com/doclib/services/taxonomy/internal/tag/mongostore"
)

// lossy is a store whose first insert is applied by the database but its
// answer lost: the service sees the write time out.
type lossy struct {
	tag.Store
	lost atomic.Bool
}

func (s *lossy) lose(err error) error {
	if err == nil && s.lost.CompareAndSwap(false, true) {
		return context.DeadlineExceeded
	}
	return err
}

func (s *lossy) InsertCategory(ctx context.Context, c tag.Category, key *idempotency.Claim) error {
	return s.lose(s.Store.InsertCategory(ctx, c, key))
}

func (s *lossy) InsertTag(ctx context.Context, t tag.Tag, key *idempotency.Claim) error {
	return s.lose(s.Store.InsertTag(ctx, t, key))
}

// keyedAPI is the taxonomy behind the Idempotency-Key middleware, on a
// store that loses its first insert's answer once lose is set.
func keyedAPI(t *testing.T) (*api, *lossy) {
	t.Helper()
	t.Parallel()
	db, log := testkit.Mongo(t), slog.New(slog.DiscardHandler)
	store := mongostore.New(db, log)
	testkit.Must(t, store.EnsureIndexes(t.Context()), "indexes")
	ls := &lossy{Store: store}
	ls.lost.Store(true)
	e := httpx.NewEngine("taxonomy", log)
	e.Use(idemstore.Middleware(context.Background(), db, log, time.Hour, nil))
	httpapi.New(tag.NewService(ls), store, nil).Register(e)
	return &api{t: t, h: e, store: store, keys: db.Collection(idemstore.Collection)}, ls
}

// kept reports whether the middleware keeps an outcome for key (sent
// with no caller identity, as these tests do).
func (a *api) kept(key string) bool {
	a.t.Helper()
	n, err := a.keys.CountDocuments(a.t.Context(), bson.M{"_id": idempotency.ScopedID("", key)})
	testkit.Must(a.t, err, "count kept keys")
	return n > 0
}

// A tag or category create the database applied but whose answer was lost
// (503 outcome_unknown) answers its retry with the same Idempotency-Key as
// the first attempt would have (201 with the record), not 409 (issue 21,
// item 14); and that outcome is what the key keeps. Another request under
// an id taken by someone else is 409, not kept: its retry runs again.
func TestARetryOfATaxonomyCreateAppliedUnknowinglyAnswersTheRecord(t *testing.T) {
	a, ls := keyedAPI(t)
	creates := []struct{ path, body, key string }{
		{"/bo/tags-categories", `{"id":"health","name":"Santé"}`, "k-cat"},
		{"/bo/tags", `{"id":"flu","name":"Flu","categoryId":"health"}`, "k-tag"},
	}
	for _, c := range creates {
		ls.lost.Store(false)
		if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 503 || !strings.Contains(r.body, "outcome_unknown") {
			t.Fatalf("%s whose answer was lost: %d %s, want 503 outcome_unknown", c.path, r.status, r.body)
		}
		for i := range 2 { // the retry, then the key's kept outcome
			if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 201 || !strings.Contains(r.body, `"id":"`) {
				t.Errorf("%s retry %d: %d %s, want 201 with the record the first attempt made", c.path, i+1, r.status, r.body)
			}
		}
	}
	other := `{"id":"health","name":"Other"}`
	for i := range 2 {
		if r := a.do("POST", "/bo/tags-categories", other, "Idempotency-Key", "k-other"); r.status != 409 {
			t.Errorf("another request under a taken id, attempt %d: %d %s, want 409", i+1, r.status, r.body)
		}
	}
	testkit.Must(t, a.store.DeleteCategory(t.Context(), "health", time.Now()), "delete")
	a.must("POST", "/bo/tags-categories", other, 201) // sanity: the id is free
	if r := a.do("POST", "/bo/tags-categories", `{"id":"x","name":"X"}`, "Idempotency-Key", "k-other"); r.status != 201 {
		t.Errorf("the key whose answer was 409, for another body: %d %s, want 201 (the 409 was not kept)", r.status, r.body)
	}
}

// A tag or category create the database applied but whose answer was lost,
// deleted before its retry with the same Idempotency-Key and body, is not
// created again: the retry is 409 created_tag_deleted or
// created_category_deleted, and that answer is not kept as the key's
// (each retry is told again). The deletion's events have been published and
// the relay has swept (as it does at once in production): the key's
// tombstone stays for the key's life. Another body under the key is 422.
func TestARetryOfATaxonomyCreateDeletedSinceIsNotCreatedAgain(t *testing.T) {
	a, ls := keyedAPI(t)
	a.must("POST", "/bo/tags-categories", `{"id":"home","name":"Home"}`, 201)
	creates := []struct{ path, body, other, key, id, code string }{
		{"/bo/tags-categories", `{"id":"health","name":"Santé"}`, `{"id":"other","name":"Other"}`,
			"k-cat", "health", "created_category_deleted"},
		{"/bo/tags", `{"id":"flu","name":"Flu","categoryId":"home"}`, `{"id":"other","name":"Other","categoryId":"home"}`,
			"k-tag", "flu", "created_tag_deleted"},
	}
	for _, c := range creates {
		ls.lost.Store(false)
		if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 503 {
			t.Fatalf("%s whose answer was lost: %d %s, want 503 outcome_unknown", c.path, r.status, r.body)
		}
		a.must("DELETE", c.path+"/"+c.id, "", 204)
		a.publishAndSweep()
		for i := range 2 {
			r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key)
			var p problemBody
			if r.status == 409 {
				r.json(t, &p)
			}
			if p.Code != c.code || !strings.Contains(r.body, c.id) {
				t.Errorf("%s retry %d after the delete: %d %s, want 409 %s naming %s", c.path, i+1, r.status, r.body, c.code, c.id)
			}
			if a.kept(c.key) {
				t.Errorf("%s retry %d after the delete: the 409 is kept as the key's outcome, want it let go", c.path, i+1)
			}
		}
		if r := a.must("GET", "/bo/tags-categories", "", 200); strings.Contains(r.body, `"id":"`+c.id+`"`) {
			t.Errorf("%s: %s exists again after the retries: %s", c.path, c.id, r.body)
		}
		if r := a.do("POST", c.path, c.other, "Idempotency-Key", c.key); r.status != 422 {
			t.Errorf("%s: another body under the key: %d %s, want 422", c.path, r.status, r.body)
		}
		a.must("DELETE", c.path+"/other", "", 404) // nothing made by it
	}
	// A new key makes them anew (and keeps that outcome: kept is sound).
	if r := a.do("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, "Idempotency-Key", "k-new"); r.status != 201 || !a.kept("k-new") {
		t.Errorf("a new key: %d %s, kept %v; want 201, kept", r.status, r.body, a.kept("k-new"))
	}
	a.must("POST", "/bo/tags", `{"id":"flu","name":"Flu","categoryId":"home"}`, 201)
}

// publishAndSweep does what the outbox relay does once it has published
// every event: the tombstones' outboxes are emptied, then Sweep runs.
func (a *api) publishAndSweep() {
	a.t.Helper()
	cats, tags := a.store.Collections()
	for _, coll := range []*mongo.Collection{cats, tags} {
		_, err := coll.UpdateMany(a.t.Context(), bson.M{}, bson.M{"$unset": bson.M{"outbox": ""}, "$set": bson.M{"outboxCount": 0}})
		testkit.Must(a.t, err, "mark published")
	}
	testkit.Must(a.t, a.store.Sweep(a.t.Context()), "sweep")
}

// A keyed tag create the database applied but whose answer was lost,
// whose category was deleted before the retry (which deletes the tag with
// it), is answered 409 created_tag_deleted, not 422 "unknown category";
// and that answer is not kept: once the category is back, a retry is told
// the same (the key's tombstone), never a kept 422.
func TestARetryOfATagCreateWhoseCategoryWasDeletedIsCreatedTagDeleted(t *testing.T) {
	a, ls := keyedAPI(t)
	a.must("POST", "/bo/tags-categories", `{"id":"home","name":"Home"}`, 201)
	body := `{"id":"flu","name":"Flu","categoryId":"home"}`
	ls.lost.Store(false)
	if r := a.do("POST", "/bo/tags", body, "Idempotency-Key", "k-tag"); r.status != 503 {
		t.Fatalf("a tag create whose answer was lost: %d %s, want 503 outcome_unknown", r.status, r.body)
	}
	a.must("DELETE", "/bo/tags-categories/home", "", 204)
	retry := func(when string) {
		t.Helper()
		for i := range 2 {
			r := a.do("POST", "/bo/tags", body, "Idempotency-Key", "k-tag")
			var p problemBody
			if r.status == 409 {
				r.json(t, &p)
			}
			if p.Code != "created_tag_deleted" || !strings.Contains(r.body, "flu") {
				t.Errorf("retry %d %s: %d %s, want 409 created_tag_deleted naming flu", i+1, when, r.status, r.body)
			}
			if a.kept("k-tag") {
				t.Errorf("retry %d %s: the answer is kept as the key's outcome, want it let go", i+1, when)
			}
		}
	}
	retry("after the category's delete")
	a.publishAndSweep()
	retry("after the category's delete was published")
	a.must("POST", "/bo/tags-categories", `{"id":"home","name":"Home"}`, 201)
	retry("after the category is back")
	// An unkeyed create in a missing category is still 422.
	a.must("POST", "/bo/tags", `{"id":"x","name":"X","categoryId":"nope"}`, 422)

	// A category deletion stopped half-way (the category marked deleted,
	// its tags not yet): the key's tag is live, and counts as deleted.
	a.must("POST", "/bo/tags-categories", `{"id":"work","name":"Work"}`, 201)
	ls.lost.Store(false)
	cold := `{"id":"cold","name":"Cold","categoryId":"work"}`
	if r := a.do("POST", "/bo/tags", cold, "Idempotency-Key", "k-cold"); r.status != 503 {
		t.Fatalf("a tag create whose answer was lost: %d %s, want 503 outcome_unknown", r.status, r.body)
	}
	cats, _ := a.store.Collections()
	_, err := cats.UpdateOne(t.Context(), bson.M{"id": "work"}, bson.M{"$set": bson.M{"id": "~gone", "nameKey": "~gone", "deletedAt": time.Now(), "deletedId": "work"}})
	testkit.Must(t, err, "mark the category deleted")
	r := a.do("POST", "/bo/tags", cold, "Idempotency-Key", "k-cold")
	var p problemBody
	if r.status == 409 {
		r.json(t, &p)
	}
	if p.Code != "created_tag_deleted" || !strings.Contains(r.body, "cold") || a.kept("k-cold") {
		t.Errorf("retry with the category half-deleted: %d %s (kept %v), want 409 created_tag_deleted naming cold, not kept", r.status, r.body, a.kept("k-cold"))
	}
}
