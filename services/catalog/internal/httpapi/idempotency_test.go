package httpapi_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
	"github.com/doclib/services/catalog/internal/httpapi"
	"github.com/doclib/services/catalog/internal/library"
)

// lossy is a store whose first create is applied by the database but its
// answer lost: the service sees the commit time out.
type lossy struct {
	document.Store
	lost atomic.Bool
}

func (s *lossy) lose(d document.Document, err error) (document.Document, error) {
	if err == nil && s.lost.CompareAndSwap(false, true) {
		return document.Document{}, context.DeadlineExceeded
	}
	return d, err
}

func (s *lossy) Create(ctx context.Context, id string, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	return s.lose(s.Store.Create(ctx, id, adds, fn))
}

// keyedReplica is a catalog replica behind the Idempotency-Key middleware,
// its keys kept retention, on a store that loses its first create's answer.
func keyedReplica(t *testing.T, retention time.Duration) (*replica, *lossy) {
	t.Helper()
	db, log := testkit.Mongo(t), slog.New(slog.DiscardHandler)
	testkit.NeedsTransactions(t, db)
	store := mongostore.New(db, log)
	testkit.Must(t, store.EnsureIndexes(context.Background()), "EnsureIndexes")
	ls := &lossy{Store: store}
	w := newWorld()
	svc := document.NewService(ls, w, log)
	lib := library.New(store, w, log)
	t.Cleanup(lib.Close)
	engine := httpx.NewEngine("catalog", log)
	keys := idempotency.NewKeys(db.Client(), db.Name(), idempotency.KeysConfig{Retention: retention, Log: log,
		Recheck: httpapi.CreatedDeleted(svc.Get)})
	testkit.Must(t, keys.EnsureIndexes(context.Background()), "keys")
	engine.Use(keys.Middleware())
	media, _ := url.Parse("http://127.0.0.1:1")
	httpapi.New(svc, lib, httpapi.Options{MediaURL: media}).Register(engine)
	return &replica{t: t, world: w, svc: svc, lib: lib, h: engine}, ls
}

// A create whose write failed as unavailable (503 outcome_unknown) left
// nothing: its answer of 500 or more undid the write and freed the key,
// so a retry with the key creates the document once; then the key holds
// that answer: another body is 422, the same body gets the same 201.
func TestARetryOfACreateAnsweredUnknownMakesNoDuplicate(t *testing.T) {
	t.Parallel()
	r, _ := keyedReplica(t, time.Hour)
	body, key := linkBody("once", ""), "k-1"
	if a := r.do("POST", "/bo/documents", body, "Idempotency-Key", key); a.code != 503 || a.problemCode(t) != "outcome_unknown" {
		t.Fatalf("the create whose answer was lost: %d %s, want 503 outcome_unknown", a.code, a.body)
	}
	var again boDoc
	r.must("POST", "/bo/documents", body, 201, "Idempotency-Key", key).json(t, &again)
	var list []boDoc
	r.must("GET", "/bo/documents", "", 200).json(t, &list)
	if len(list) != 1 || list[0].ID != again.ID {
		t.Fatalf("after the retry the catalog holds %d documents (%v); want one, %s", len(list), list, again.ID)
	}
	if a := r.do("POST", "/bo/documents", linkBody("other", ""), "Idempotency-Key", key); a.code != 422 || a.problemCode(t) != "idempotency_key_reused" {
		t.Errorf("another body with the key: %d %s, want 422 idempotency_key_reused", a.code, a.body)
	}
	if a := r.do("POST", "/bo/documents", body, "Idempotency-Key", key); a.code != 201 || !strings.Contains(string(a.body), again.ID) {
		t.Errorf("a second retry: %d %s, want the same 201", a.code, a.body)
	}
}

// A retry after an unknown outcome whose create was committed (its key's
// answer never confirmed) and whose document was deleted since, in the
// trash or purged, is told so (409 created_document_deleted, not kept):
// never answered as made, never created again.
func TestARetryWhoseDocumentWasDeletedIsToldSo(t *testing.T) {
	t.Parallel()
	r, ls := keyedReplica(t, time.Hour)
	ls.lost.Store(true) // no create is lost here
	ctx := context.Background()
	body, key := linkBody("gone", ""), "k-3"
	var made boDoc
	r.must("POST", "/bo/documents", body, 201, "Idempotency-Key", key).json(t, &made)
	store := ls.Store.(*mongostore.Store)
	keys := store.Documents().Database().Collection(idempotency.KeysCollection)
	// As if the first attempt never saw its commit succeed.
	_, err := keys.UpdateOne(ctx, map[string]any{}, map[string]any{"$set": map[string]any{"confirmed": false}})
	testkit.Must(t, err, "unconfirm the key's answer")
	r.must("DELETE", "/bo/documents/"+made.ID, "", 204)
	for i, where := range []string{"trash", "purged"} {
		if i == 1 {
			_, err := r.svc.PurgeTrash(ctx, time.Now().Add(time.Hour), 10)
			testkit.Must(t, err, "purge")
			_, err = store.Sweep(ctx)
			testkit.Must(t, err, "sweep")
		}
		for range 2 {
			a := r.do("POST", "/bo/documents", body, "Idempotency-Key", key)
			if a.code != 409 || a.problemCode(t) != "created_document_deleted" || !strings.Contains(string(a.body), where) {
				t.Errorf("%s: the retry: %d %s, want 409 created_document_deleted saying %s", where, a.code, a.body, where)
			}
		}
	}
	if n, err := store.Documents().CountDocuments(ctx, map[string]any{}); err != nil || n != 0 {
		t.Errorf("the catalog holds %d documents (%v), want none", n, err)
	}
}
