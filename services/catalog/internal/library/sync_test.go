package library

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// Issue 21, item 1: create a category and a tag, create a document with
// that tag, sync from the previous cursor at once: the page holds the
// document, and the categories that name its tag. Same after the tag's
// deletion: the changed document comes with the categories without it.
// With taxonomy down, such a page fails (503), and a page of nothing new
// does not.
func TestASyncPageCarriesTheCategoriesOfItsTags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc := newCatalog(t, 2)
	l := replica(t, store, w)
	testkit.Must(t, l.RefreshCategories(ctx), "RefreshCategories") // as the background job does
	first, err := l.Sync(ctx, "", 100*time.Millisecond)
	testkit.Must(t, err, "Sync")

	w.Tag("fresh", created, "new-category")
	d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "T", URL: "https://x.org", TagsIDs: []string{"fresh"}})
	testkit.Must(t, err, "Create")
	l.Put(d) // written through this replica
	tagged, err := l.Sync(ctx, first.Next.String(), 100*time.Millisecond)
	testkit.Must(t, err, "Sync")
	if len(tagged.Documents) != 1 || !strings.Contains(string(tagged.Categories), `"fresh"`) {
		t.Errorf("a page with a document naming a new tag: %d documents, categories %s; want the document and the tag's category",
			len(tagged.Documents), tagged.Categories)
	}

	w.Untag("fresh")
	changed, err := svc.TagsDeleted(ctx, []string{"fresh"})
	testkit.Must(t, err, "TagsDeleted")
	l.Put(changed...)
	untagged, err := l.Sync(ctx, tagged.Next.String(), 100*time.Millisecond)
	testkit.Must(t, err, "Sync")
	if len(untagged.Documents) != 1 || untagged.Categories == nil || strings.Contains(string(untagged.Categories), `"fresh"`) {
		t.Errorf("a page with a document that lost a deleted tag: %d documents, categories %s; want the document and the categories without the tag",
			len(untagged.Documents), untagged.Categories)
	}

	down := errors.New("taxonomy down")
	_, err = svc.Update(ctx, d.ID, document.Input{Type: "LINK", Title: "T2", URL: "https://x.org"})
	testkit.Must(t, err, "Update")
	w.Fail(down)
	if _, err := l.Sync(ctx, untagged.Next.String(), 0); !errors.Is(err, down) {
		t.Errorf("a page with a changed document, taxonomy down: %v, want its error", err)
	}
	s, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	if p, err := l.Sync(ctx, Cursor{Seq: s.Stable, Floor: s.Stable, Categories: untagged.Next.Categories}.String(), 0); err != nil || len(p.Documents) != 0 {
		t.Errorf("a page of nothing new, taxonomy down: %d documents, %v; want an empty page", len(p.Documents), err)
	}
}

// Issue 21, item 11: with more documents than a page holds, delete V,
// take the first page's cursor (V is not in it), let V be purged: that
// cursor goes on, since its client never held V.
func TestAFirstSyncSpanningAPurgeIsNotExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc := newCatalog(t, 2)
	in := document.Input{Type: "LINK", Title: "T", URL: "https://x.org"}
	for range 3 {
		_, err := svc.Create(ctx, in)
		testkit.Must(t, err, "Create")
	}
	v, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create")
	_, _, err = svc.Delete(ctx, v.ID)
	testkit.Must(t, err, "Delete")

	l := replica(t, store, w)
	l.pageSize = 1
	p, err := l.Sync(ctx, "", 0)
	testkit.Must(t, err, "Sync")
	if slices.ContainsFunc(p.Documents, func(d *document.Document) bool { return d.ID == v.ID }) || !p.HasMore {
		t.Fatalf("the first page holds the deleted document, or is the last")
	}
	if n, err := svc.PurgeTrash(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("PurgeTrash = %d, %v", n, err)
	}
	_, err = store.Documents().UpdateMany(ctx, map[string]any{}, map[string]any{"$unset": map[string]any{"outbox": ""}, "$set": map[string]any{"outboxCount": 0}})
	testkit.Must(t, err, "publish the events")
	if n, err := store.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
	held := len(p.Documents)
	for p.HasMore {
		if p, err = l.Sync(ctx, p.Next.String(), 0); err != nil {
			t.Fatalf("the first sync's next page after a purge of a document it never held: %v", err)
		}
		held += len(p.Documents)
	}
	if held != 3 {
		t.Errorf("the first sync ended with %d documents, want 3", held)
	}
}
