package document_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/doctest"
	"github.com/doclib/services/catalog/internal/document/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var (
	t1     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pdf    = document.Media{ID: "pdf", Name: "guide.pdf", MimeType: "application/pdf"}
	png    = document.Media{ID: "png", Name: "a.png", MimeType: "image/png"}
	newDoc = document.Input{Type: "MARKDOWN", Title: "T", Content: "x", TagsIDs: []string{"a", "b"}, ImagesIDs: []string{"png"}}
)

func newWorld() *doctest.World {
	return doctest.New().Tag("a", t1, "c").Tag("b", t1, "c").Media(pdf).Media(png)
}

func newService(t *testing.T, w *doctest.World) (*document.Service, *mongostore.Store) {
	t.Helper()
	t.Parallel()
	store := mongostore.New(testkit.Mongo(t), slog.New(slog.DiscardHandler))
	testkit.Must(t, store.EnsureIndexes(context.Background()), "EnsureIndexes")
	return document.NewService(store, w, testkit.Logger(t)), store
}

func TestCreate(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	d, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "Create")
	got, _ := store.Get(ctx, d.ID)
	if got.Seq == 0 || got.Title != "T" || strings.Join(got.TagsIDs, ",") != "a,b" || !got.TagSince["a"].Equal(t1) || !got.CreatedAt.Equal(d.CreatedAt) {
		t.Errorf("stored %+v", got)
	}
	// A body wrong in itself writes nothing, and its unknown references
	// are named too.
	_, err = svc.Create(ctx, document.Input{Type: "LINK", Title: "", URL: "x", TagsIDs: []string{"a", "zz"}})
	if got := document.Failing(t, err); got != "title,url,tagsIds[1]" {
		t.Errorf("failing fields %s", got)
	}
	_, err = svc.Create(ctx, document.Input{Type: "PDF", Title: "T", FileID: "png"})
	if got := document.Failing(t, err); got != "fileId" {
		t.Errorf("failing fields %s", got)
	}
	if all, _ := store.Changes(ctx, 0, "", 10); len(all) != 1 {
		t.Errorf("refused creates left documents: %v", all)
	}
}

func TestUpdateDeleteRestore(t *testing.T) {
	w := newWorld()
	svc, store := newService(t, w)
	ctx := context.Background()
	d, err := svc.Create(ctx, document.Input{Type: "PDF", Title: "P", FileID: "pdf", TagsIDs: []string{"a"}})
	testkit.Must(t, err, "Create")
	if _, err := svc.Update(ctx, "nope", document.Input{Type: "PDF", Title: "x", FileID: "pdf"}); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("PATCH unknown = %v", err)
	}
	if _, err := svc.Update(ctx, d.ID, document.Input{Type: "LINK", Title: "x", URL: "https://x.org"}); !errors.Is(err, document.ErrTypeImmutable) {
		t.Errorf("PATCH another type = %v", err)
	}
	u, err := svc.Update(ctx, d.ID, document.Input{Type: "PDF", Title: "P2", FileID: "pdf", TagsIDs: []string{"b"}})
	testkit.Must(t, err, "Update")
	if u.Title != "P2" || strings.Join(u.TagsIDs, ",") != "b" || u.File.Name != "guide.pdf" || !u.UpdatedAt.After(d.UpdatedAt) || !u.CreatedAt.Equal(d.CreatedAt) {
		t.Errorf("updated %+v", u)
	}
	for i, want := range []bool{true, false} {
		_, deleted, err := svc.Delete(ctx, d.ID)
		if err != nil || deleted != want {
			t.Errorf("delete #%d = %v, %v; want %v", i+1, deleted, err, want)
		}
	}
	if _, _, err := svc.Delete(ctx, "nope"); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("delete unknown = %v", err)
	}
	if _, err := svc.Update(ctx, d.ID, document.Input{Type: "PDF", Title: "x", FileID: "pdf"}); !errors.Is(err, document.ErrDeleted) {
		t.Errorf("PATCH of a deleted document = %v", err)
	}
	got, _ := store.Get(ctx, d.ID)
	if !got.IsDeleted || got.DeletedAt.IsZero() {
		t.Errorf("deleted document %+v", got)
	}
	// Its media is being deleted meanwhile: it comes back without it.
	w.Media(document.Media{ID: "pdf", MimeType: "application/pdf", Deleting: true})
	r, _, err := svc.Restore(ctx, d.ID)
	testkit.Must(t, err, "Restore")
	if r.IsDeleted || !r.DeletedAt.IsZero() || r.File != nil || strings.Join(r.TagsIDs, ",") != "b" {
		t.Errorf("restored %+v, want live without its file", r)
	}
	again, _, err := svc.Restore(ctx, d.ID)
	if err != nil || again.Seq != r.Seq {
		t.Errorf("restore of a live document = %+v, %v; want a no-op", again, err)
	}
}

// A media being deleted, or a tag gone, at the lookup is refused.
func TestReferencesGoneAtTheLookupAreRefused(t *testing.T) {
	w := newWorld()
	svc, _ := newService(t, w)
	w.Untag("b")
	w.Media(document.Media{ID: "png", MimeType: "image/png", Deleting: true})
	_, err := svc.Create(context.Background(), newDoc)
	if got := document.Failing(t, err); got != "tagsIds[1],imagesIds[0]" {
		t.Errorf("failing fields %s", got)
	}
}

// Tag deletions reach every document, deleted ones too; an id created
// anew since spares the documents checked against the new tag.
func TestTagsDeleted(t *testing.T) {
	w := newWorld()
	svc, store := newService(t, w)
	ctx := context.Background()
	old, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "Create")
	trashed, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "Create")
	_, _, err = svc.Delete(ctx, trashed.ID)
	testkit.Must(t, err, "Delete")
	// a is deleted and created anew; a document is checked against the new a.
	w.Tag("a", t1.Add(time.Hour), "c")
	fresh, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "L", URL: "https://x.org", TagsIDs: []string{"a"}})
	testkit.Must(t, err, "Create")
	// b is deleted for good.
	w.Untag("b")

	for i := range 2 { // twice: idempotent
		changed, err := svc.TagsDeleted(ctx, []string{"a", "b"})
		testkit.Must(t, err, "TagsDeleted")
		if want := []int{2, 0}[i]; len(changed) != want {
			t.Errorf("TagsDeleted #%d changed %d documents, want %d", i+1, len(changed), want)
		}
	}
	for _, c := range []struct {
		id, want string
	}{{old.ID, ""}, {trashed.ID, ""}, {fresh.ID, "a"}} {
		d, _ := store.Get(ctx, c.id)
		if strings.Join(d.TagsIDs, ",") != c.want {
			t.Errorf("document %s has tags %v, want [%s]", c.id, d.TagsIDs, c.want)
		}
	}
	w.Fail(&document.UnavailableError{Service: "taxonomy", Err: errors.New("down")})
	if _, err := svc.TagsDeleted(ctx, []string{"a"}); !document.IsUnavailable(err) {
		t.Errorf("TagsDeleted with taxonomy down = %v, want unavailable", err)
	}
}

// A tag deleted, created anew and given to a document while the deletion's
// event is being applied: the document keeps the new tag whichever way the
// two interleave (issue 21 item 4). The deletion asks taxonomy once it
// holds the documents; asking before, it took the new tag for the old one.
func TestATagCreatedAnewDuringItsDeletionIsKept(t *testing.T) {
	w := newWorld()
	svc, store := newService(t, w)
	ctx := context.Background()
	d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "L", URL: "https://x.org", TagsIDs: []string{"a"}})
	testkit.Must(t, err, "Create")
	w.Untag("a")
	var once sync.Once
	written := make(chan error, 1)
	w.OnTags(func() {
		once.Do(func() {
			// Just after the deletion's lookup answered: a is created anew
			// and d written against it.
			w.Tag("a", t1.Add(time.Hour), "c")
			go func() {
				_, err := svc.Update(ctx, d.ID, document.Input{Type: "LINK", Title: "L2", URL: "https://x.org", TagsIDs: []string{"a"}})
				written <- err
			}()
			select { // done at once unless the deletion holds d
			case err := <-written:
				written <- err
			case <-time.After(300 * time.Millisecond):
			}
		})
	})
	_, err = svc.TagsDeleted(ctx, []string{"a"})
	testkit.Must(t, err, "TagsDeleted")
	testkit.Must(t, <-written, "Update")
	got, _ := store.Get(ctx, d.ID)
	if got.Title != "L2" || strings.Join(got.TagsIDs, ",") != "a" || !got.TagSince["a"].Equal(t1.Add(time.Hour)) {
		t.Errorf("document after both: title %q, tags %v, since %v; want L2 with the new a", got.Title, got.TagsIDs, got.TagSince)
	}
}

func TestMediaDeleted(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	live, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "Create")
	p, err := svc.Create(ctx, document.Input{Type: "PDF", Title: "P", FileID: "pdf"})
	testkit.Must(t, err, "Create")
	_, _, err = svc.Delete(ctx, p.ID)
	testkit.Must(t, err, "Delete")
	for _, id := range []string{"pdf", "png"} {
		changed, liveUsers, err := svc.MediaDeleted(ctx, id)
		testkit.Must(t, err, "MediaDeleted")
		if len(changed) != 1 || (id == "png") != (strings.Join(liveUsers, ",") == live.ID) {
			t.Errorf("MediaDeleted(%s) changed %d, live %v", id, len(changed), liveUsers)
		}
	}
	a, _ := store.Get(ctx, live.ID)
	b, _ := store.Get(ctx, p.ID)
	if len(a.ImagesIDs) != 0 || b.File != nil {
		t.Errorf("after the media deletions: images %v, file %v", a.ImagesIDs, b.File)
	}
	if changed, _, _ := svc.MediaDeleted(ctx, "png"); len(changed) != 0 {
		t.Errorf("MediaDeleted again changed %d", len(changed))
	}
}

// A document stored before TagSince was kept is judged by when it was
// last written.
func TestLegacyDocumentsAndATagCreatedAnew(t *testing.T) {
	w := newWorld()
	svc, store := newService(t, w)
	ctx := context.Background()
	mk := func(at time.Time) string {
		d, err := store.Create(ctx, document.NewID(), document.Refs{Tags: []string{"a"}}, func(d *document.Document) error {
			d.Title, d.Type, d.URL, d.TagsIDs, d.CreatedAt, d.UpdatedAt = "L", document.Link, "https://x.org", []string{"a"}, at, at
			return nil
		})
		testkit.Must(t, err, "Create")
		return d.ID
	}
	before, after := mk(t1), mk(t1.Add(2*time.Hour))
	w.Tag("a", t1.Add(time.Hour), "c")
	_, err := svc.TagsDeleted(ctx, []string{"a"})
	testkit.Must(t, err, "TagsDeleted")
	b, _ := store.Get(ctx, before)
	a, _ := store.Get(ctx, after)
	if len(b.TagsIDs) != 0 || strings.Join(a.TagsIDs, ",") != "a" {
		t.Errorf("written before the new tag: %v (want none); after: %v (want a)", b.TagsIDs, a.TagsIDs)
	}
}

// Each change records who made it; an event's change is nobody's.
func TestWhoChangedIt(t *testing.T) {
	w := newWorld()
	svc, store := newService(t, w)
	as := func(name string) context.Context {
		return identity.With(context.Background(), identity.Caller{Name: name, Role: identity.Editor})
	}
	d, err := svc.Create(as("alice"), newDoc)
	testkit.Must(t, err, "Create")
	if d.CreatedBy != "alice" || d.UpdatedBy != "alice" || d.DeletedBy != "" {
		t.Errorf("created: by %q, updated by %q, deleted by %q", d.CreatedBy, d.UpdatedBy, d.DeletedBy)
	}
	_, err = svc.Update(as("bob"), d.ID, newDoc)
	testkit.Must(t, err, "Update")
	_, _, err = svc.Delete(as("carol"), d.ID)
	testkit.Must(t, err, "Delete")
	got, _ := store.Get(context.Background(), d.ID)
	if got.CreatedBy != "alice" || got.UpdatedBy != "carol" || got.DeletedBy != "carol" || got.DeletedAt.IsZero() {
		t.Errorf("after bob's PATCH and carol's DELETE: %+v", got)
	}
	w.Untag("a")
	_, err = svc.TagsDeleted(context.Background(), []string{"a"})
	testkit.Must(t, err, "TagsDeleted")
	r, _, err := svc.Restore(as("dave"), d.ID)
	testkit.Must(t, err, "Restore")
	if r.CreatedBy != "alice" || r.UpdatedBy != "dave" || r.DeletedBy != "" || !r.DeletedAt.IsZero() || strings.Join(r.TagsIDs, ",") != "b" {
		t.Errorf("restored by dave: %+v", r)
	}
}

// Pinned related documents must be live documents other than the one
// written, each once.
func TestPins(t *testing.T) {
	svc, _ := newService(t, newWorld())
	ctx := context.Background()
	link := func(title string, pins ...string) document.Input {
		return document.Input{Type: "LINK", Title: title, URL: "https://x.org", RelatedIDs: pins}
	}
	a, err := svc.Create(ctx, link("a"))
	testkit.Must(t, err, "Create")
	gone, err := svc.Create(ctx, link("gone"))
	testkit.Must(t, err, "Create")
	_, _, err = svc.Delete(ctx, gone.ID)
	testkit.Must(t, err, "Delete")
	b, err := svc.Create(ctx, link("b", a.ID))
	testkit.Must(t, err, "Create with a pin")
	if strings.Join(b.RelatedIDs, ",") != a.ID {
		t.Errorf("pins %v", b.RelatedIDs)
	}
	_, err = svc.Update(ctx, b.ID, link("b", a.ID, gone.ID, "nope", b.ID, a.ID))
	if got := document.Failing(t, err); got != "relatedIds[1],relatedIds[2],relatedIds[3],relatedIds[4]" {
		t.Errorf("failing fields %s", got)
	}
	_, err = svc.Create(ctx, document.Input{Type: "LINK", Title: "", URL: "https://x.org", RelatedIDs: []string{"nope"}})
	if got := document.Failing(t, err); got != "title,relatedIds[0]" {
		t.Errorf("failing fields %s", got)
	}
	eleven := make([]string, document.MaxPins+1)
	for i := range eleven {
		eleven[i] = a.ID
	}
	_, err = svc.Create(ctx, link("c", eleven...))
	if got := document.Failing(t, err); got != "relatedIds" {
		t.Errorf("failing fields %s", got)
	}
}

// A pin already stored is not checked again: its document deleted, the
// pinning document's body can be sent back; purged, it is dropped from
// the documents that pin it (issue 21 item 9).
func TestAPinDeletedThenPurged(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	link := func(title string, pins ...string) document.Input {
		return document.Input{Type: "LINK", Title: title, URL: "https://x.org", RelatedIDs: pins}
	}
	p, err := svc.Create(ctx, link("pinned"))
	testkit.Must(t, err, "Create")
	other, err := svc.Create(ctx, link("other"))
	testkit.Must(t, err, "Create")
	d, err := svc.Create(ctx, link("pinning", p.ID, other.ID))
	testkit.Must(t, err, "Create")
	_, _, err = svc.Delete(ctx, p.ID)
	testkit.Must(t, err, "Delete")
	u, err := svc.Update(ctx, d.ID, link("pinning 2", p.ID, other.ID))
	testkit.Must(t, err, "Update after the pin's deletion")
	if strings.Join(u.RelatedIDs, ",") != p.ID+","+other.ID {
		t.Errorf("pins after the pin's deletion %v", u.RelatedIDs)
	}
	if n, err := svc.PurgeTrash(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("PurgeTrash = %d, %v", n, err)
	}
	got, _ := store.Get(ctx, d.ID)
	if strings.Join(got.RelatedIDs, ",") != other.ID || !got.UpdatedAt.Equal(u.UpdatedAt) {
		t.Errorf("after the purge: pins %v, updatedAt %v; want only %s, updatedAt unchanged", got.RelatedIDs, got.UpdatedAt, other.ID)
	}
	// The body read before the purge: the pin is one being added now.
	_, err = svc.Update(ctx, d.ID, link("pinning 3", p.ID, other.ID))
	if got := document.Failing(t, err); got != "relatedIds[0]" {
		t.Errorf("failing fields %s", got)
	}
	u, err = svc.Update(ctx, d.ID, link("pinning 3", other.ID))
	testkit.Must(t, err, "Update after the purge")
	if strings.Join(u.RelatedIDs, ",") != other.ID {
		t.Errorf("pins after the purge %v", u.RelatedIDs)
	}
}

// A tag deletion applied while an edit is asking taxonomy about the tag
// does not wait for the edit: it changes the document at once, and the
// edit, finding the tag's guard raised, runs again and is refused.
func TestATagDeletionDuringAnEditGoesFirst(t *testing.T) {
	w := newWorld()
	svc, store := newService(t, w)
	ctx := context.Background()
	in := document.Input{Type: "LINK", Title: "L", URL: "https://x.org", TagsIDs: []string{"a", "b"}}
	d, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create")
	var deleted error
	w.OnTags(once(func() { // the edit's lookup has its answer
		w.Untag("b")
		_, deleted = svc.TagsDeleted(ctx, []string{"b"})
	}))
	in.Title = "L2"
	_, err = svc.Update(ctx, d.ID, in)
	testkit.Must(t, deleted, "TagsDeleted")
	if got := document.Failing(t, err); got != "tagsIds[1]" {
		t.Errorf("the edit failing on %q, want tagsIds[1]", got)
	}
	got, err := store.Get(ctx, d.ID)
	testkit.Must(t, err, "Get")
	if got.Version != d.Version+1 || got.Title != "L" || strings.Join(got.TagsIDs, ",") != "a" || got.Change.At.Before(d.Change.At) {
		t.Errorf("after the deletion and the refused edit: %+v", got)
	}
}
