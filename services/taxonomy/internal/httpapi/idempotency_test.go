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

// lossy is a store whose insert fails once it has written (lost false):
// the service sees the write time out after the record was inserted in
// the request's transaction.
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
	store := mongostore.New(db, outbox.New(db, log), log)
	testkit.Must(t, store.EnsureIndexes(t.Context()), "indexes")
	ls := &lossy{Store: store}
	ls.lost.Store(true)
	e := httpx.NewEngine("taxonomy", log)
	keys := idempotency.NewKeys(db.Client(), db.Name(), idempotency.KeysConfig{Retention: time.Hour, Log: log})
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

// A keyed tag or category create commits its record with its answer: one
// whose store failed after the insert (503) leaves neither, and its retry
// creates it (201); that answer is kept and replayed, even once the record
// is deleted, which is not created again. A 409 on a taken id is the
// key's answer too; the key with another body is 422.
func TestAKeyedTaxonomyCreateCommitsWithItsAnswer(t *testing.T) {
	a, ls := keyedAPI(t)
	creates := []struct{ path, body, key, id string }{
		{"/bo/tags-categories", `{"id":"health","name":"Santé"}`, "k-cat", "health"},
		{"/bo/tags", `{"id":"flu","name":"Flu","categoryId":"health"}`, "k-tag", "flu"},
	}
	for _, c := range creates {
		ls.lost.Store(false)
		if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 503 || !strings.Contains(r.body, "outcome_unknown") {
			t.Fatalf("%s whose store failed after the insert: %d %s, want 503 outcome_unknown", c.path, r.status, r.body)
		}
		if r := a.must("GET", "/bo/tags-categories", "", 200); strings.Contains(r.body, `"id":"`+c.id+`"`) || a.kept(c.key) {
			t.Fatalf("%s: a failed create left %s or its key (kept %v): %s", c.path, c.id, a.kept(c.key), r.body)
		}
		first := a.do("POST", c.path, c.body, "Idempotency-Key", c.key)
		if first.status != 201 || !a.kept(c.key) {
			t.Fatalf("%s retry: %d %s (kept %v), want 201, kept", c.path, first.status, first.body, a.kept(c.key))
		}
		if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 201 || r.body != first.body {
			t.Errorf("%s replay: %d %s, want the first answer %s", c.path, r.status, r.body, first.body)
		}
	}
	a.must("DELETE", "/bo/tags-categories/health", "", 204) // and flu with it
	for _, c := range creates {
		if r := a.do("POST", c.path, c.body, "Idempotency-Key", c.key); r.status != 201 || !strings.Contains(r.body, `"id":"`+c.id+`"`) {
			t.Errorf("%s after the delete: %d %s, want the first answer, 201", c.path, r.status, r.body)
		}
	}
	if r := a.must("GET", "/bo/tags-categories", "", 200); r.body != "[]" {
		t.Errorf("the retries made records again: %s", r.body)
	}
	a.must("POST", "/bo/tags-categories", `{"id":"home","name":"Home"}`, 201)
	for i := range 2 {
		if r := a.do("POST", "/bo/tags-categories", `{"id":"home","name":"Other"}`, "Idempotency-Key", "k-other"); r.status != 409 {
			t.Errorf("a taken id under a key, attempt %d: %d %s, want 409", i+1, r.status, r.body)
		}
	}
	if r := a.do("POST", "/bo/tags-categories", `{"id":"x","name":"X"}`, "Idempotency-Key", "k-other"); r.status != 422 {
		t.Errorf("the key of a 409 with another body: %d %s, want 422", r.status, r.body)
	}
}
