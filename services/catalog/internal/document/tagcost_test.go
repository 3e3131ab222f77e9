package document_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"

	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
)

// operations counts what a client asks of the database: one per command,
// one per statement of an update or delete (the server runs each).
type operations struct{ n atomic.Int64 }

func (o *operations) monitor() *event.CommandMonitor {
	return &event.CommandMonitor{Started: func(_ context.Context, e *event.CommandStartedEvent) {
		n := int64(1)
		for _, field := range []string{"updates", "deletes"} {
			if arr, ok := e.Command.Lookup(field).ArrayOK(); ok {
				vals, _ := arr.Values()
				n = int64(len(vals))
			}
		}
		o.n.Add(n)
	}}
}

// tagDeletionCost creates n documents naming tag a (half with pending
// changes naming it too, each with its revision still to store, as after
// any write), deletes the tag and returns how many database operations
// the deletion cost; it checks the deletion did what the single-document
// path does.
func tagDeletionCost(t *testing.T, n int) int64 {
	t.Helper()
	ops := &operations{}
	client, err := mongo.Connect(options.Client().ApplyURI(testkit.MongoURI(t)).SetMonitor(ops.monitor()))
	testkit.Must(t, err, "connect")
	t.Cleanup(func() { _ = client.Disconnect(context.Background()) })
	db := client.Database(testkit.UniqueName(t))
	t.Cleanup(func() { _ = db.Drop(context.Background()) })
	store := mongostore.New(db, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	testkit.Must(t, store.EnsureIndexes(ctx), "EnsureIndexes")
	w := newWorld()
	svc := document.NewService(store, w, slog.New(slog.DiscardHandler))
	before := map[string]document.Document{}
	for i := range n {
		d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: fmt.Sprint(i), URL: "https://x.org", TagsIDs: []string{"a", "b"}})
		testkit.Must(t, err, "Create")
		if i%2 == 0 {
			d, err = svc.Update(ctx, d.ID, document.Input{Type: "LINK", Title: "draft", URL: "https://x.org", TagsIDs: []string{"b", "a"}, Draft: true})
			testkit.Must(t, err, "Update (draft)")
		}
		before[d.ID] = d
	}
	w.Untag("a")
	start := ops.n.Load()
	changed, err := svc.TagsDeleted(ctx, []string{"a"})
	testkit.Must(t, err, "TagsDeleted")
	cost := ops.n.Load() - start
	if len(changed) != n {
		t.Fatalf("TagsDeleted changed %d documents, want %d", len(changed), n)
	}
	for _, c := range changed {
		got, err := store.Get(ctx, c.ID)
		testkit.Must(t, err, "Get")
		b := before[c.ID]
		if slices.Contains(got.TagsIDs, "a") || (got.Draft != nil && slices.Contains(got.Draft.TagsIDs, "a")) ||
			!slices.Contains(got.TagsIDs, "b") || got.Version != b.Version+1 ||
			got.Change.Why != "event library.taxonomy.tag.deleted" || (b.Draft != nil) != (got.Draft != nil) ||
			got.Seq != c.Seq || got.Version != c.Version || !got.Change.At.Equal(c.Change.At) {
			t.Errorf("after the deletion %s is %+v (answered %+v), was %+v", c.ID, got, c, b)
		}
		if r, err := store.GetRevision(ctx, c.ID, got.Version); err != nil || slices.Contains(r.Doc.TagsIDs, "a") {
			t.Errorf("revision %d of %s (the deletion's): %+v, %v", got.Version, c.ID, r, err)
		}
	}
	return cost
}

// Issue 22 item 2: one tag deletion costs the same number of database
// operations whatever the number of documents naming the tag.
func TestATagDeletionsCostDoesNotGrowWithItsDocuments(t *testing.T) {
	t.Parallel()
	few, many := tagDeletionCost(t, 4), tagDeletionCost(t, 40)
	t.Logf("a tag deletion of 4 documents cost %d database operations, of 40 documents %d", few, many)
	if many > few {
		t.Errorf("a tag deletion of 4 documents cost %d database operations, of 40 documents %d: want no growth", few, many)
	}
}
