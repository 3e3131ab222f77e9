package document_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

func link(title string, tags ...string) document.Input {
	return document.Input{Type: "LINK", Title: title, URL: "https://example.org/" + title, TagsIDs: tags}
}

func versions(t *testing.T, svc *document.Service, id string) string {
	t.Helper()
	page, err := svc.Revisions(context.Background(), id, 0, 100, false)
	testkit.Must(t, err, "Revisions")
	var out []string
	for _, r := range page.Revisions {
		out = append(out, r.Change.Why[:strings.IndexByte(r.Change.Why+" ", ' ')])
	}
	return strings.Join(out, ",")
}

// Every write keeps a revision: the document as it was after it, with
// who, when and why; newest first.
func TestEveryWriteKeepsARevision(t *testing.T) {
	w := newWorld()
	svc, _ := newService(t, w)
	ctx := identity.With(context.Background(), identity.Caller{Name: "ana"})
	d, err := svc.Create(ctx, link("one", "a"))
	testkit.Must(t, err, "Create")
	_, err = svc.Update(ctx, d.ID, link("two", "a", "b"))
	testkit.Must(t, err, "Update")
	_, _, err = svc.Delete(ctx, d.ID)
	testkit.Must(t, err, "Delete")
	_, _, err = svc.Restore(ctx, d.ID)
	testkit.Must(t, err, "Restore")
	w.Untag("b")
	_, err = svc.TagsDeleted(ctx, []string{"b"})
	testkit.Must(t, err, "TagsDeleted")
	if got := versions(t, svc, d.ID); got != "event,POST,DELETE,PATCH,POST" {
		t.Errorf("revisions (why, newest first) = %s", got)
	}
	r, err := svc.Revision(ctx, d.ID, 2)
	testkit.Must(t, err, "Revision")
	if r.Doc.Title != "two" || strings.Join(r.Doc.TagsIDs, ",") != "a,b" || r.Change.By != "ana" || r.Change.Why != document.WhyUpdate {
		t.Errorf("revision 2 = %+v", r)
	}
	if _, err := svc.Revision(ctx, d.ID, 99); !errors.Is(err, document.ErrRevisionNotFound) {
		t.Errorf("revision 99: %v, want ErrRevisionNotFound", err)
	}
	page, _ := svc.Revisions(ctx, d.ID, 3, 1, false)
	if len(page.Revisions) != 1 || page.Revisions[0].Version != 2 {
		t.Errorf("page before 3 = %+v, want revision 2", page)
	}
}

// A stale If-Match changes nothing; the right one, or none, writes.
func TestIfMatch(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	d, err := svc.Create(ctx, link("one"))
	testkit.Must(t, err, "Create")
	_, err = svc.Update(document.IfMatch(ctx, []int64{d.Version}), d.ID, link("two"))
	testkit.Must(t, err, "Update with the right version")
	for what, write := range map[string]func(context.Context) error{
		"PATCH":   func(ctx context.Context) error { _, err := svc.Update(ctx, d.ID, link("three")); return err },
		"DELETE":  func(ctx context.Context) error { _, _, err := svc.Delete(ctx, d.ID); return err },
		"publish": func(ctx context.Context) error { _, err := svc.Unpublish(ctx, d.ID); return err },
	} {
		if err := write(document.IfMatch(ctx, []int64{d.Version})); !errors.Is(err, document.ErrVersionMismatch) {
			t.Errorf("%s with a stale If-Match: %v, want ErrVersionMismatch", what, err)
		}
	}
	got, _ := store.Get(ctx, d.ID)
	if got.Title != "two" || got.IsDeleted || got.Version != 2 {
		t.Errorf("after refused writes: %+v", got)
	}
	// A weak tag never matches (the strong comparison, RFC 9110 §13.1.1).
	current := func(tag string) bool { return tag == `"3.abc-gzip"` }
	if v := document.ParseIfMatch(`W/"2.abc-gzip", "7", "3.abc-gzip"`, current); !slices.Equal(v, []int64{-1, 7, 3}) {
		t.Errorf("ParseIfMatch = %v", v)
	}
	// The detail's tag is compared whole: its version alone is not enough.
	if v := document.ParseIfMatch(`"3.ffffffffffff", "3.abc-gzip-x", "3.abc"`, current); !slices.Equal(v, []int64{-1, -1, -1}) {
		t.Errorf("ParseIfMatch of tags not current = %v, want none matching", v)
	}
	if v := document.ParseIfMatch(`"3.abc-gzip"`, nil); !slices.Equal(v, []int64{-1}) {
		t.Errorf("ParseIfMatch with no current detail = %v", v)
	}
	if v := document.ParseIfMatch(`*`, nil); v != nil {
		t.Errorf("ParseIfMatch(*) = %v", v)
	}
}

// Every write's revision commits with it: there as soon as the write
// answered, and a write refused leaves none.
func TestARevisionCommitsWithItsWrite(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	d, err := svc.Create(ctx, link("one"))
	testkit.Must(t, err, "Create")
	_, err = svc.Update(ctx, d.ID, link("two"))
	testkit.Must(t, err, "Update")
	_, err = svc.Update(document.IfMatch(ctx, []int64{1}), d.ID, link("stale"))
	if !errors.Is(err, document.ErrVersionMismatch) {
		t.Fatalf("stale update = %v, want a version mismatch", err)
	}
	for v, title := range map[int64]string{1: "one", 2: "two"} {
		if r, err := store.GetRevision(ctx, d.ID, v); err != nil || r.Doc.Title != title {
			t.Errorf("revision %d = %+v, %v; want %q", v, r, err, title)
		}
	}
	if _, err := store.GetRevision(ctx, d.ID, 3); !errors.Is(err, document.ErrRevisionNotFound) {
		t.Errorf("revision 3 = %v, want none", err)
	}
}

// A restored revision drops the references that no longer hold and says
// which.
func TestRestoreRevision(t *testing.T) {
	w := newWorld()
	svc, _ := newService(t, w)
	ctx := context.Background()
	d, err := svc.Create(ctx, document.Input{Type: "MARKDOWN", Title: "v1", Content: "x", TagsIDs: []string{"a", "b"}, ImagesIDs: []string{"png"}})
	testkit.Must(t, err, "Create")
	_, err = svc.Update(ctx, d.ID, document.Input{Type: "MARKDOWN", Title: "v2", Content: "y"})
	testkit.Must(t, err, "Update")
	w.Untag("b")
	w.Media(document.Media{ID: "png", MimeType: "image/png", Deleting: true})
	got, dropped, err := svc.RestoreRevision(ctx, d.ID, 1)
	testkit.Must(t, err, "RestoreRevision")
	if got.Title != "v1" || strings.Join(got.TagsIDs, ",") != "a" || len(got.ImagesIDs) != 0 || got.Version != 3 {
		t.Errorf("restored %+v", got)
	}
	if strings.Join(dropped.TagsIDs, ",") != "b" || strings.Join(dropped.MediaIDs, ",") != "png" {
		t.Errorf("dropped %+v", dropped)
	}
	if _, _, err := svc.RestoreRevision(ctx, d.ID, 42); !errors.Is(err, document.ErrRevisionNotFound) {
		t.Errorf("restore of an unknown revision: %v", err)
	}
	other, _ := svc.Create(ctx, link("other"))
	if _, _, err := svc.RestoreRevision(ctx, other.ID, 3); !errors.Is(err, document.ErrRevisionNotFound) {
		t.Errorf("restore of another document's revision number: %v", err)
	}
}

// Drafts: invisible publicly until published; pending changes kept beside
// the live version; publish, discard, unpublish.
func TestDrafts(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	in := link("draft")
	in.Status = "draft"
	d, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create draft")
	if _, public := document.PublicView(d); public || d.State() != document.Draft {
		t.Errorf("a created draft is public: %+v", d)
	}
	if _, err := svc.Unpublish(ctx, d.ID); !errors.Is(err, document.ErrNotPublished) {
		t.Errorf("unpublish of a draft: %v", err)
	}
	p, err := svc.Publish(ctx, d.ID)
	testkit.Must(t, err, "Publish")
	if _, public := document.PublicView(p); !public || p.PublishedAt.IsZero() {
		t.Errorf("published %+v", p)
	}
	if _, err := svc.Publish(ctx, d.ID); !errors.Is(err, document.ErrNothingToPublish) {
		t.Errorf("second publish: %v", err)
	}
	pending := link("pending", "a")
	pending.Draft = true
	u, err := svc.Update(ctx, d.ID, pending)
	testkit.Must(t, err, "Update draft")
	view, _ := document.PublicView(u)
	if u.Title != "draft" || u.Draft == nil || u.Draft.Title != "pending" || view.Draft != nil {
		t.Errorf("pending changes: %+v", u)
	}
	_, err = svc.DiscardDraft(ctx, d.ID)
	testkit.Must(t, err, "DiscardDraft")
	if _, err := svc.DiscardDraft(ctx, d.ID); !errors.Is(err, document.ErrNoDraft) {
		t.Errorf("second discard: %v", err)
	}
	_, err = svc.Update(ctx, d.ID, pending)
	testkit.Must(t, err, "Update draft")
	p, err = svc.Publish(ctx, d.ID)
	testkit.Must(t, err, "Publish pending")
	if p.Title != "pending" || p.Draft != nil {
		t.Errorf("published pending changes: %+v", p)
	}
	_, err = svc.Unpublish(ctx, d.ID)
	testkit.Must(t, err, "Unpublish")
	got, _ := store.Get(ctx, d.ID)
	if _, public := document.PublicView(got); public {
		t.Errorf("unpublished document is public: %+v", got)
	}
}

// Pending changes obey the reference rules: a tag deletion reaches them,
// a media they use counts as used.
func TestPendingChangesObeyTheReferenceRules(t *testing.T) {
	w := newWorld()
	svc, _ := newService(t, w)
	ctx := context.Background()
	d, err := svc.Create(ctx, link("live", "a"))
	testkit.Must(t, err, "Create")
	in := document.Input{Type: "LINK", Title: "p", URL: "https://example.org", TagsIDs: []string{"a", "b"}, Draft: true}
	_, err = svc.Update(ctx, d.ID, in)
	testkit.Must(t, err, "Update draft")
	w.Untag("b")
	changed, err := svc.TagsDeleted(ctx, []string{"b"})
	testkit.Must(t, err, "TagsDeleted")
	if len(changed) != 1 || strings.Join(changed[0].Draft.TagsIDs, ",") != "a" {
		t.Errorf("tag deletion on pending changes: %+v", changed)
	}
	md, err := svc.Create(ctx, document.Input{Type: "MARKDOWN", Title: "m", Content: "x"})
	testkit.Must(t, err, "Create markdown")
	_, err = svc.Update(ctx, md.ID, document.Input{Type: "MARKDOWN", Title: "m", Content: "x", ImagesIDs: []string{"png"}, Draft: true})
	testkit.Must(t, err, "Update markdown draft")
	if users, _ := svc.MediaUsers(ctx, "png"); !slices.Contains(users, md.ID) {
		t.Errorf("media users = %v, want the document whose pending changes use it", users)
	}
}

// Bad schedules are refused with every field named; a due schedule is
// applied once however many run it.
func TestSchedule(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	bad := link("s")
	bad.Status, bad.PublishAt, bad.UnpublishAt = "draft", "2001-01-01T00:00:00Z", "tomorrow"
	_, err := svc.Create(ctx, bad)
	if got := document.Failing(t, err); got != "publishAt,unpublishAt" {
		t.Errorf("failing fields %s", got)
	}
	live := link("s")
	live.PublishAt = time.Now().Add(time.Hour).Format(time.RFC3339)
	_, err = svc.Create(ctx, live)
	if got := document.Failing(t, err); got != "publishAt" {
		t.Errorf("publishAt on a published document: failing fields %s", got)
	}
	in := link("s")
	in.Status, in.PublishAt = "draft", time.Now().Add(2*time.Second).Format(time.RFC3339Nano)
	d, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create scheduled")
	if c, _ := svc.RunSchedule(ctx, time.Now(), 10); len(c) != 0 {
		t.Errorf("applied before it is due: %+v", c)
	}
	at := time.Now().Add(3 * time.Second) // RunSchedule is told the time: no waiting
	results := make(chan int, 4)
	for range 4 {
		go func() { c, _ := svc.RunSchedule(ctx, at, 10); results <- len(c) }()
	}
	total := 0
	for range 4 {
		total += <-results
	}
	got, _ := store.Get(ctx, d.ID)
	if _, public := document.PublicView(got); total != 1 || !public || !got.PublishAt.IsZero() {
		t.Errorf("four runs applied it %d times; document %+v", total, got)
	}
}

// A revision's time runs forward per document even when the replica that
// writes it has a clock behind the one that wrote the change before
// (review final-data, finding 1): age retention removes by time, and must
// not remove a newer revision and keep an older one.
func TestRevisionTimesRunForwardPerDocument(t *testing.T) {
	svc, _ := newService(t, newWorld())
	ctx := context.Background()
	d, err := svc.Create(ctx, link("one"))
	testkit.Must(t, err, "Create")
	behind := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	document.SetClock(svc, func() time.Time { return behind })
	_, err = svc.Update(ctx, d.ID, link("two"))
	testkit.Must(t, err, "Update")
	r1, err := svc.Revision(ctx, d.ID, 1)
	testkit.Must(t, err, "Revision 1")
	r2, err := svc.Revision(ctx, d.ID, 2)
	testkit.Must(t, err, "Revision 2")
	if !r2.Change.At.After(r1.Change.At) {
		t.Errorf("revision 2 at %v, not after revision 1 at %v", r2.Change.At, r1.Change.At)
	}
}
