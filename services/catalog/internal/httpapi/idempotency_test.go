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
	idemstore "github.com/doclib/libs/idempotency/mongostore"
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

func (s *lossy) CreateKeyed(ctx context.Context, id string, key document.Key, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	return s.lose(s.Store.CreateKeyed(ctx, id, key, adds, fn))
}

// keyedReplica is a catalog replica behind the Idempotency-Key middleware,
// its keys kept retention, on a store that loses its first create's answer.
func keyedReplica(t *testing.T, retention time.Duration) (*replica, *lossy) {
	t.Helper()
	db, log := testkit.Mongo(t), slog.New(slog.DiscardHandler)
	store := mongostore.New(db, log)
	testkit.Must(t, store.EnsureIndexes(context.Background()), "EnsureIndexes")
	ls := &lossy{Store: store}
	w := newWorld()
	svc := document.NewService(ls, w, log)
	lib := library.New(store, w, log)
	t.Cleanup(lib.Close)
	engine := httpx.NewEngine("catalog", log)
	engine.Use(idemstore.Middleware(context.Background(), db, log, retention, nil))
	media, _ := url.Parse("http://127.0.0.1:1")
	httpapi.New(svc, lib, httpapi.Options{MediaURL: media}).Register(engine)
	return &replica{t: t, world: w, svc: svc, lib: lib, h: engine}, ls
}

// A create whose commit the database applied but whose answer the
// catalog never got (503 outcome_unknown) is not created again by a retry
// with the same Idempotency-Key (issue 21, item 14): the retry answers the
// document the first attempt made; another body with that key is 422.
func TestARetryOfACreateAppliedUnknowinglyMakesNoDuplicate(t *testing.T) {
	t.Parallel()
	r, _ := keyedReplica(t, time.Hour)
	body, key := linkBody("once", ""), "k-1"
	if a := r.do("POST", "/bo/documents", body, "Idempotency-Key", key); a.code != 503 || a.problemCode(t) != "outcome_unknown" {
		t.Fatalf("the create whose answer was lost: %d %s, want 503 outcome_unknown", a.code, a.body)
	}
	// The key was let go after the 503: the catalog finds the reuse (and
	// lets the key go again, so the first body's retry below gets its own
	// outcome).
	if a := r.do("POST", "/bo/documents", linkBody("other", ""), "Idempotency-Key", key); a.code != 422 || a.problemCode(t) != "idempotency_key_reused" {
		t.Errorf("another body with the key, before any retry: %d %s, want 422 idempotency_key_reused", a.code, a.body)
	}
	var again boDoc
	r.must("POST", "/bo/documents", body, 201, "Idempotency-Key", key).json(t, &again)
	var list []boDoc
	r.must("GET", "/bo/documents", "", 200).json(t, &list)
	if len(list) != 1 || list[0].ID != again.ID {
		t.Fatalf("after the retry the catalog holds %d documents (%v); want the one the first attempt made, answered by the retry (%s)", len(list), list, again.ID)
	}
	// Now the middleware holds the key's outcome: another body is 422 from
	// it, the first body gets that outcome again.
	if a := r.do("POST", "/bo/documents", linkBody("other", ""), "Idempotency-Key", key); a.code != 422 || a.problemCode(t) != "idempotency_key_reused" {
		t.Errorf("another body with the key: %d %s, want 422 idempotency_key_reused", a.code, a.body)
	}
	if a := r.do("POST", "/bo/documents", body, "Idempotency-Key", key); a.code != 201 || !strings.Contains(string(a.body), again.ID) {
		t.Errorf("a second retry: %d %s, want the same 201", a.code, a.body)
	}
}

// An expired key stored with the document it made never blocks a new
// create under the same key, whatever its body.
func TestAnExpiredKeyOnADocumentDoesNotBlockANewCreate(t *testing.T) {
	t.Parallel()
	r, _ := keyedReplica(t, time.Second)
	if a := r.do("POST", "/bo/documents", linkBody("first", ""), "Idempotency-Key", "k-2"); a.code != 503 {
		t.Fatalf("the create whose answer was lost: %d %s, want 503", a.code, a.body)
	}
	time.Sleep(1100 * time.Millisecond)
	var second boDoc
	r.must("POST", "/bo/documents", linkBody("second", ""), 201, "Idempotency-Key", "k-2").json(t, &second)
	var list []boDoc
	r.must("GET", "/bo/documents", "", 200).json(t, &list)
	if len(list) != 2 || second.Title != "second" {
		t.Errorf("after the key expired, a create under it made %q; the catalog holds %d documents, want 2", second.Title, len(list))
	}
}

// A retry whose key's document was deleted since, in the trash or purged
// within the key's retention, is told so (409 created_document_deleted,
// not kept): never answered as made, never created again. The purged
// document's tombstone stays while its key lives (the sweep keeps it).
func TestARetryWhoseDocumentWasDeletedIsToldSo(t *testing.T) {
	t.Parallel()
	r, ls := keyedReplica(t, time.Hour)
	ctx := context.Background()
	body, key := linkBody("gone", ""), "k-3"
	if a := r.do("POST", "/bo/documents", body, "Idempotency-Key", key); a.code != 503 {
		t.Fatalf("the create whose answer was lost: %d %s, want 503", a.code, a.body)
	}
	made, _, _, err := ls.Keyed(ctx, idempotency.ScopedID("", key))
	testkit.Must(t, err, "the document the key made")
	r.must("DELETE", "/bo/documents/"+made.ID, "", 204)
	for i, where := range []string{"trash", "purged"} {
		if i == 1 {
			store := ls.Store.(*mongostore.Store)
			_, err := r.svc.PurgeTrash(ctx, time.Now().Add(time.Hour), 10)
			testkit.Must(t, err, "purge")
			_, err = store.Documents().UpdateMany(ctx, map[string]any{}, map[string]any{"$unset": map[string]any{"outbox": ""}, "$set": map[string]any{"outboxCount": 0}})
			testkit.Must(t, err, "publish the events")
			if n, err := store.Sweep(ctx); err != nil || n != 0 {
				t.Errorf("Sweep = %d, %v; want the tombstone kept while its key lives", n, err)
			}
		}
		for range 2 {
			a := r.do("POST", "/bo/documents", body, "Idempotency-Key", key)
			if a.code != 409 || a.problemCode(t) != "created_document_deleted" || !strings.Contains(string(a.body), where) {
				t.Errorf("%s: the retry: %d %s, want 409 created_document_deleted saying %s", where, a.code, a.body, where)
			}
		}
	}
	if n, err := ls.Store.(*mongostore.Store).Documents().CountDocuments(ctx, map[string]any{}); err != nil || n != 1 {
		t.Errorf("the catalog holds %d documents (%v), want the one tombstone", n, err)
	}
}
