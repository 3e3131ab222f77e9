package library

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/doctest"
)

// bundleWorld is taxonomy and media as a bundle asks them: doctest's world
// with the public settings and a media record of 1,000 bytes for each media.
type bundleWorld struct {
	*doctest.World
	config string
}

func (w *bundleWorld) PublicConfig(context.Context) (json.RawMessage, error) {
	return json.RawMessage(w.config), nil
}

func (w *bundleWorld) Files(ctx context.Context, ids []string) ([]File, error) {
	ms, err := w.Medias(ctx, ids)
	var out []File
	for id := range ms {
		out = append(out, File{ID: id, Size: 1000, Record: json.RawMessage(fmt.Sprintf(`{"id":%q,"size":1000}`, id))})
	}
	return out, err
}

// A bundle is a first sync made whole: a document written after it, one
// changed and one deleted come in the sync from its cursor; the filter
// keeps the details and files of the tagged documents only, and lists
// every document; the ETag moves with any of it.
func TestBundleThenSyncMissesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc := newCatalog(t, 2)
	w.Media(document.Media{ID: "m1", Name: "a.pdf", MimeType: "application/pdf"})
	bw := &bundleWorld{World: w, config: `{"moderatorEmail":"m@example.org"}`}
	l := New(store, bw, slog.New(slog.DiscardHandler))
	t.Cleanup(l.Close)
	create := func(in document.Input) document.Document {
		d, err := svc.Create(ctx, in)
		testkit.Must(t, err, "Create")
		l.Put(d)
		return d
	}
	pdf := create(document.Input{Type: "PDF", Title: "P", FileID: "m1", TagsIDs: []string{"t0"}})
	link := create(document.Input{Type: "LINK", Title: "L", URL: "https://x.org", TagsIDs: []string{"t1"}})
	gone := create(document.Input{Type: "LINK", Title: "G", URL: "https://x.org"})

	b, err := l.Bundle(ctx, nil, 0)
	testkit.Must(t, err, "Bundle")
	if len(b.Listing) != 3 || len(b.Details) != 3 || len(b.Files) != 1 || b.FilesSize != 1000 || string(b.Config) != bw.config || b.Categories == nil {
		t.Fatalf("bundle: %d listed, %d details, %d files of %d bytes, config %s; want 3, 3, 1 of 1000, the settings",
			len(b.Listing), len(b.Details), len(b.Files), b.FilesSize, b.Config)
	}
	pinned, err := l.Bundle(ctx, []string{"t0"}, 0)
	testkit.Must(t, err, "Bundle")
	if len(pinned.Listing) != 3 || len(pinned.Details) != 1 || pinned.Details[0].ID != pdf.ID || len(pinned.Files) != 1 || pinned.ETag == b.ETag {
		t.Errorf("bundle pinned to t0: %d listed, %d details, %d files, etag %s (whole: %s); want 3, the PDF, its file, another ETag",
			len(pinned.Listing), len(pinned.Details), len(pinned.Files), pinned.ETag, b.ETag)
	}
	again, err := l.Bundle(ctx, nil, 0)
	testkit.Must(t, err, "Bundle")
	if again.ETag != b.ETag {
		t.Errorf("the same library gave ETags %s and %s", b.ETag, again.ETag)
	}

	// Written after the bundle, through another replica: this one learns
	// of them from the store only.
	fresh, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "N", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	_, err = svc.Update(ctx, link.ID, document.Input{Type: "LINK", Title: "L2", URL: "https://x.org", TagsIDs: []string{"t1"}})
	testkit.Must(t, err, "Update")
	_, _, err = svc.Delete(ctx, gone.ID)
	testkit.Must(t, err, "Delete")

	p, err := l.Sync(ctx, b.Next.String(), 0)
	testkit.Must(t, err, "Sync")
	var got []string
	for _, d := range p.Documents {
		got = append(got, d.ID+"="+d.Title)
	}
	slices.Sort(got)
	want := []string{fresh.ID + "=N", link.ID + "=L2"}
	slices.Sort(want)
	if !slices.Equal(got, want) || !slices.Equal(p.Removed, []string{gone.ID}) {
		t.Errorf("sync from the bundle's cursor: %v removed %v; want %v removed [%s]", got, p.Removed, want, gone.ID)
	}
	after, err := l.Bundle(ctx, nil, 0)
	testkit.Must(t, err, "Bundle")
	if after.ETag == b.ETag || len(after.Listing) != 3 {
		t.Errorf("bundle after the writes: %d listed, ETag %s (before %s); want 3 and another ETag", len(after.Listing), after.ETag, b.ETag)
	}
}

func TestBundleTags(t *testing.T) {
	t.Parallel()
	if tags, err := ParseBundleTags("b,a,b"); err != nil || !slices.Equal(tags, []string{"a", "b"}) {
		t.Errorf("ParseBundleTags(b,a,b) = %v, %v; want [a b]", tags, err)
	}
	for _, bad := range []string{",", "a,,b", "-a", strings.Repeat("x", 65), strings.Repeat("a,", 100) + "a"} {
		if _, err := ParseBundleTags(bad); err == nil {
			t.Errorf("ParseBundleTags(%q) accepted", bad)
		}
	}
}

// A library made without a source of settings and media records has no
// bundle, and says why.
func TestBundleWithoutSource(t *testing.T) {
	t.Parallel()
	l := New(nil, doctest.New(), slog.New(slog.DiscardHandler))
	if _, err := l.Bundle(context.Background(), nil, 0); !errors.Is(err, ErrNoBundleSource) {
		t.Errorf("Bundle without a source: %v, want ErrNoBundleSource", err)
	}
}

// Pages are bounded by bytes as well as by count: documents with long
// titles make pages of fewer documents than PageSize, each within the
// bound, and a client applying them, from scratch and from a cursor,
// gets every document once.
func TestSyncPagesAreBoundedByBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc := newCatalog(t, 1)
	l := replica(t, store, w)
	l.pageBytes = 3000
	var ids []string
	for i := range 12 {
		title := fmt.Sprintf("%d %s", i, strings.Repeat("<&>", 90)) // each character escaped to six bytes
		d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: title, URL: "https://x.org"})
		testkit.Must(t, err, "Create")
		ids = append(ids, d.ID)
	}
	seen, removed := map[string]int{}, map[string]int{}
	pages, cursor := 0, ""
	syncAll := func() {
		for {
			p, err := l.Sync(ctx, cursor, 0)
			testkit.Must(t, err, "Sync")
			pages++
			size := len(p.Removed) * 25
			for _, id := range p.Removed {
				removed[id]++
			}
			for _, d := range p.Documents {
				seen[d.ID]++
				b, _ := json.Marshal(map[string]any{"id": d.ID, "title": d.Title, "type": d.Type, "url": d.URL,
					"tagsIds": d.TagsIDs, "updatedAt": "2026-11-22T10:15:30.123Z"})
				size += len(b) + 1
			}
			if size > l.pageBytes && len(p.Documents)+len(p.Removed) > 1 {
				t.Errorf("page %d: %d documents in %d bytes, over the bound of %d", pages, len(p.Documents), size, l.pageBytes)
			}
			cursor = p.Next.String()
			if !p.HasMore || pages > 40 {
				return
			}
		}
	}
	syncAll()
	if pages < 4 || len(seen) != len(ids) {
		t.Errorf("%d pages, %d documents seen; want at least 4 pages (each about 1.6 KiB a document) and all %d", pages, len(seen), len(ids))
	}
	// From the cursor: 3 deleted, 3 changed, spread over several pages.
	for i, id := range ids[:6] {
		if i < 3 {
			_, _, err := svc.Delete(ctx, id)
			testkit.Must(t, err, "Delete")
			continue
		}
		_, err := svc.Update(ctx, id, document.Input{Type: "LINK", Title: fmt.Sprintf("%d changed %s", i, strings.Repeat("<&>", 90)), URL: "https://x.org"})
		testkit.Must(t, err, "Update")
	}
	before := pages
	syncAll()
	if pages-before < 2 || len(removed) != 3 || seen[ids[3]] != 2 || seen[ids[5]] != 2 {
		t.Errorf("from the cursor: %d pages, removed %v, changed ones seen %d, %d times; want 2 pages or more, 3 removed, each changed twice in all",
			pages-before, removed, seen[ids[3]], seen[ids[5]])
	}
	for i, id := range ids {
		if want := map[bool]int{true: 2, false: 1}[i >= 3 && i < 6]; seen[id] != want {
			t.Errorf("document %d came %d times, want %d (changed ones twice)", i, seen[id], want)
		}
	}
	for id, n := range removed {
		if n != 1 {
			t.Errorf("removal of %s came %d times", id, n)
		}
	}
}
