package httpapi_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/outbox"
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

func (s *lossy) InsertCategory(ctx context.Context, c tag.Category) error {
	return s.lose(s.Store.InsertCategory(ctx, c))
}

func (s *lossy) InsertTag(ctx context.Context, t tag.Tag) error {
	return s.lose(s.Store.InsertTag(ctx, t))
}

// keyedAPI is the taxonomy behind the Idempotency-Key middleware, on a
// store that loses its first insert's answer once lose is set.
func keyedAPI(t *testing.T) (*api, *lossy) {
	t.Helper()
	t.Parallel()
	db, log := testkit.Mongo(t), slog.New(slog.DiscardHandler)
	testkit.NeedsTransactions(t, db)
	store := mongostore.New(db, outbox.New(db, log), log)
	testkit.Must(t, store.EnsureIndexes(t.Context()), "indexes")
	ls := &lossy{Store: store}
	ls.lost.Store(true)
	e := httpx.NewEngine("taxonomy", log)
	keys := idempotency.NewKeys(db.Client(), db, idempotency.KeysConfig{Retention: time.Hour, Log: log})
	testkit.Must(t, keys.EnsureIndexes(t.Context()), "key indexes")
	e.Use(keys.Middleware())
	httpapi.New(tag.NewService(ls), store).Register(e)
	return &api{t: t, h: e, store: store, keys: db.Collection(idempotency.KeysCollection)}, ls
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

// A create applied whose answer was lost, deleted before its retry with the
// same Idempotency-Key and body, is not created again: the retry gets the
// first outcome (201), as every retry under a key does, and the record
// stays deleted. A tag's category deleted meanwhile changes nothing.
func TestARetryOfATaxonomyCreateDeletedSinceGetsTheFirstAnswer(t *testing.T) {
	a, ls := keyedAPI(t)
	a.must("POST", "/bo/tags-categories", `{"id":"home","name":"Home"}`, 201)
	creates := []struct{ path, body, key, id, gone string }{
		{"/bo/tags-categories", `{"id":"health","name":"Santé"}`, "k-cat", "health", "/bo/tags-categories/health"},
		{"/bo/tags", `{"id":"flu","name":"Flu","categoryId":"home"}`, "k-tag", "flu", "/bo/tags-categories/home"},
	}
	for _, c := range creates {
		ls.lost.Store(false)
		if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 503 {
			t.Fatalf("%s whose answer was lost: %d %s, want 503 outcome_unknown", c.path, r.status, r.body)
		}
		a.must("DELETE", c.gone, "", 204)
		for i := range 2 {
			if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 201 || !strings.Contains(r.body, `"id":"`+c.id+`"`) {
				t.Errorf("%s retry %d after the delete: %d %s, want the first answer, 201 with %s", c.path, i+1, r.status, r.body, c.id)
			}
		}
		if r := a.must("GET", "/bo/tags-categories", "", 200); strings.Contains(r.body, `"id":"`+c.id+`"`) {
			t.Errorf("%s: %s exists again after the retries: %s", c.path, c.id, r.body)
		}
	}
}
