package mongostore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func newStore(t *testing.T) (*mongostore.Store, context.Context) {
	t.Helper()
	t.Parallel()
	s := mongostore.New(testkit.Mongo(t), slog.New(slog.DiscardHandler))
	ctx := context.Background()
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes")
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes twice")
	return s, ctx
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func md(id string, at time.Time, tags ...string) document.Document {
	return document.Document{ID: id, Title: "Doc " + id, Type: document.Markdown, Content: "# " + id,
		Sources: []string{"s"}, ImagesIDs: []string{}, TagsIDs: tags, CreatedAt: at, UpdatedAt: at}
}

func TestListNewestFirstWithoutContent(t *testing.T) {
	s, ctx := newStore(t)
	testkit.Must(t, s.Insert(ctx, md("a", t0)), "insert")
	testkit.Must(t, s.Insert(ctx, md("c", t0.Add(time.Minute))), "insert")
	testkit.Must(t, s.Insert(ctx, document.Document{ID: "b", Title: "Link", Type: document.Link, URL: "https://x.org",
		CreatedAt: t0.Add(2 * time.Minute), UpdatedAt: t0.Add(2 * time.Minute)}), "insert")
	got, err := s.List(ctx, false)
	testkit.Must(t, err, "List")
	var ids []string
	for _, d := range got {
		ids = append(ids, d.ID)
	}
	if strings.Join(ids, ",") != "b,c,a" {
		t.Errorf("order = %v, want b,c,a", ids)
	}
	if got[0].URL != "https://x.org" || got[0].TagsIDs == nil {
		t.Errorf("link summary = %+v", got[0])
	}
	d, err := s.Get(ctx, "a")
	testkit.Must(t, err, "Get")
	if d.Content != "# a" || len(d.Sources) != 1 || d.ImagesIDs == nil || !d.CreatedAt.Equal(t0) {
		t.Errorf("detail = %+v", d)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("Get unknown: %v", err)
	}
}

func TestSoftDeleteRestoreAndEvents(t *testing.T) {
	s, ctx := newStore(t)
	testkit.Must(t, s.Insert(ctx, md("a", t0)), "insert")
	rev0, _ := s.Revision(ctx)
	deleted, err := s.SoftDelete(ctx, "a", t0.Add(time.Hour))
	if err != nil || !deleted {
		t.Fatalf("first delete = %v, %v", deleted, err)
	}
	deleted, err = s.SoftDelete(ctx, "a", t0.Add(2*time.Hour))
	if err != nil || deleted {
		t.Fatalf("second delete = %v, %v; want false, nil (idempotent)", deleted, err)
	}
	if _, err := s.SoftDelete(ctx, "nope", t0); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("delete unknown: %v", err)
	}
	var raw bson.M
	testkit.Must(t, s.Documents().FindOne(ctx, bson.M{"_id": "a"}).Decode(&raw), "raw")
	if n, _ := raw["outboxCount"].(int32); n != 1 {
		t.Errorf("outboxCount = %v, want exactly one deletion event", raw["outboxCount"])
	}
	if rev, _ := s.Revision(ctx); rev <= rev0 {
		t.Errorf("revision did not move on delete: %d -> %d", rev0, rev)
	}
	if live, _ := s.List(ctx, false); len(live) != 0 {
		t.Errorf("public listing shows a deleted document: %v", live)
	}
	if all, _ := s.List(ctx, true); len(all) != 1 || !all[0].IsDeleted {
		t.Errorf("admin listing = %v, want the deleted document", all)
	}
	d, err := s.Restore(ctx, "a", t0.Add(3*time.Hour))
	if err != nil || d.IsDeleted {
		t.Fatalf("restore = %+v, %v", d, err)
	}
}

func TestReplaceIsOptimistic(t *testing.T) {
	s, ctx := newStore(t)
	d := md("a", t0)
	testkit.Must(t, s.Insert(ctx, d), "insert")
	d.Title, d.UpdatedAt = "New", t0.Add(time.Second)
	testkit.Must(t, s.Replace(ctx, d, t0), "replace")
	if err := s.Replace(ctx, d, t0); !errors.Is(err, document.ErrConflict) {
		t.Errorf("replace on stale read: %v, want ErrConflict", err)
	}
	_, _ = s.SoftDelete(ctx, "a", t0.Add(time.Hour))
	got, _ := s.Get(ctx, "a")
	if err := s.Replace(ctx, d, got.UpdatedAt); !errors.Is(err, document.ErrDeleted) {
		t.Errorf("replace of a deleted document: %v, want ErrDeleted", err)
	}
	var raw bson.M
	testkit.Must(t, s.Documents().FindOne(ctx, bson.M{"_id": "a"}).Decode(&raw), "raw")
	if raw["outbox"] == nil {
		t.Error("the pending event was lost")
	}
}

func TestConcurrentFirstWritesAllMoveTheRevision(t *testing.T) {
	s, ctx := newStore(t)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() { errs <- s.Insert(ctx, md(fmt.Sprint("d", i), t0)) }()
	}
	for range 8 {
		testkit.Must(t, <-errs, "concurrent insert")
	}
	if rev, _ := s.Revision(ctx); rev == 0 {
		t.Error("revision did not move")
	}
}

func TestReferencesCleanup(t *testing.T) {
	s, ctx := newStore(t)
	live := md("live", t0, "t1", "t2")
	live.ImagesIDs = []string{"img"}
	gone := md("gone", t0, "t2")
	gone.ImagesIDs = []string{"img", "other"}
	pdf := document.Document{ID: "pdf", Title: "P", Type: document.PDF, File: &document.File{ID: "f", Name: "f.pdf"}, CreatedAt: t0, UpdatedAt: t0}
	for _, d := range []document.Document{live, gone, pdf} {
		testkit.Must(t, s.Insert(ctx, d), "insert")
	}
	users, err := s.MediaUsers(ctx, "img")
	testkit.Must(t, err, "MediaUsers")
	if len(users) != 2 {
		t.Errorf("users of img = %v, want live and gone", users)
	}
	_, _ = s.SoftDelete(ctx, "gone", t0)
	_, _ = s.SoftDelete(ctx, "pdf", t0)
	if users, _ := s.MediaUsers(ctx, "img"); len(users) != 1 || users[0] != "live" {
		t.Errorf("users after delete = %v, want [live]", users)
	}
	if users, _ := s.MediaUsers(ctx, "f"); len(users) != 0 {
		t.Errorf("a deleted PDF still counts as a user: %v", users)
	}

	for range 2 { // twice: idempotent
		_, err := s.RemoveTags(ctx, []string{"t2"})
		testkit.Must(t, err, "RemoveTags")
	}
	a, _ := s.Get(ctx, "live")
	b, _ := s.Get(ctx, "gone")
	if strings.Join(a.TagsIDs, ",") != "t1" || len(b.TagsIDs) != 0 {
		t.Errorf("after removing t2: live %v, gone %v", a.TagsIDs, b.TagsIDs)
	}

	// "live" still uses img: a document written while img was being
	// deleted. It loses the reference too, and DropMedia names it.
	for i := range 2 { // twice: idempotent
		n, liveUsers, err := s.DropMedia(ctx, "img")
		testkit.Must(t, err, "DropMedia")
		switch {
		case i == 0 && (n != 2 || strings.Join(liveUsers, ",") != "live"):
			t.Errorf("first DropMedia(img) = %d, live %v; want 2 documents, live [live]", n, liveUsers)
		case i == 1 && (n != 0 || len(liveUsers) != 0):
			t.Errorf("second DropMedia(img) = %d, live %v; want nothing", n, liveUsers)
		}
		_, _, err = s.DropMedia(ctx, "f")
		testkit.Must(t, err, "DropMedia")
	}
	a, _ = s.Get(ctx, "live")
	b, _ = s.Get(ctx, "gone")
	p, _ := s.Get(ctx, "pdf")
	if len(a.ImagesIDs) != 0 || strings.Join(b.ImagesIDs, ",") != "other" || p.File != nil {
		t.Errorf("after dropping media: live %v, gone %v, pdf file %v", a.ImagesIDs, b.ImagesIDs, p.File)
	}
}

func TestWritesAreUnsettledUntilSettled(t *testing.T) {
	s, ctx := newStore(t)
	a := md("a", t0, "t1", "gone")
	a.ImagesIDs, a.RefsAt = []string{"img", "old"}, t0
	pdf := document.Document{ID: "pdf", Title: "P", Type: document.PDF, File: &document.File{ID: "old", Name: "f.pdf"},
		TagsIDs: []string{}, CreatedAt: t0, UpdatedAt: t0, RefsAt: t0}
	testkit.Must(t, s.Insert(ctx, a), "insert")
	testkit.Must(t, s.Insert(ctx, pdf), "insert")
	unsettled := func(before time.Time) string {
		t.Helper()
		ms, err := s.Unsettled(ctx, before, 10)
		testkit.Must(t, err, "Unsettled")
		var ids []string
		for _, m := range ms {
			ids = append(ids, m.DocumentID+"@"+m.At.Sub(t0).String())
		}
		slices.Sort(ids)
		return strings.Join(ids, ",")
	}
	if got := unsettled(t0); got != "" {
		t.Errorf("unsettled before the writes = %q, want none", got)
	}
	if got := unsettled(t0.Add(time.Second)); got != "a@0s,pdf@0s" {
		t.Errorf("unsettled = %q, want a and pdf at t0", got)
	}

	rev, _ := s.Revision(ctx)
	testkit.Must(t, s.Settle(ctx, document.Mark{DocumentID: "a", At: t0}, t0, []string{"gone"}, []string{"old"}), "Settle")
	testkit.Must(t, s.Settle(ctx, document.Mark{DocumentID: "pdf", At: t0}, t0, nil, []string{"old"}), "Settle")
	got, _ := s.Get(ctx, "a")
	p, _ := s.Get(ctx, "pdf")
	if strings.Join(got.TagsIDs, ",") != "t1" || strings.Join(got.ImagesIDs, ",") != "img" || !got.UpdatedAt.Equal(t0) ||
		!got.RefsAt.Equal(t0) || p.File != nil {
		t.Errorf("after Settle: %+v, pdf file %v", got, p.File)
	}
	if r, _ := s.Revision(ctx); r == rev {
		t.Error("dropping references did not move the listing revision")
	}
	if got := unsettled(t0.Add(time.Hour)); got != "" {
		t.Errorf("unsettled after Settle = %q, want none", got)
	}

	// A later write checked its own references: settling an earlier one
	// drops nothing from it and leaves its mark.
	b := got
	b.TagsIDs, b.UpdatedAt, b.RefsAt = []string{"t1", "gone"}, t0.Add(time.Minute), t0.Add(time.Minute)
	testkit.Must(t, s.Replace(ctx, b, t0), "Replace")
	testkit.Must(t, s.Settle(ctx, document.Mark{DocumentID: "a", At: t0}, t0, []string{"gone"}, nil), "Settle")
	if got, _ := s.Get(ctx, "a"); strings.Join(got.TagsIDs, ",") != "t1,gone" {
		t.Errorf("an earlier write's settle changed a later one: %v", got.TagsIDs)
	}
	if got := unsettled(t0.Add(time.Hour)); got != "a@1m0s" {
		t.Errorf("unsettled = %q, want a's later mark", got)
	}
	testkit.Must(t, s.Settle(ctx, document.Mark{DocumentID: "a", At: b.UpdatedAt}, b.RefsAt, nil, nil), "Settle")

	// Restore marks too, and keeps refsAt; a mark without its document is cleared.
	_, err := s.SoftDelete(ctx, "pdf", t0.Add(time.Minute))
	testkit.Must(t, err, "SoftDelete")
	restored, err := s.Restore(ctx, "pdf", t0.Add(2*time.Minute))
	testkit.Must(t, err, "Restore")
	if got := unsettled(t0.Add(time.Hour)); got != "pdf@2m0s" || !restored.RefsAt.Equal(t0) {
		t.Errorf("unsettled after Restore = %q, refsAt %v; want pdf, t0", got, restored.RefsAt)
	}
	testkit.Must(t, s.Settle(ctx, document.Mark{DocumentID: "never-written", At: t0}, time.Time{}, []string{"x"}, nil), "Settle of a missing document")
}

func TestRemoveTagCheckedBefore(t *testing.T) {
	s, ctx := newStore(t)
	old := md("old", t0, "a", "b")
	old.RefsAt = t0
	fresh := md("new", t0, "a")
	fresh.RefsAt = t0.Add(time.Minute)
	legacy := md("legacy", t0, "a") // stored before refsAt was kept: updatedAt decides
	testkit.Must(t, s.Insert(ctx, old), "insert")
	testkit.Must(t, s.Insert(ctx, fresh), "insert")
	testkit.Must(t, s.Insert(ctx, legacy), "insert")
	n, err := s.RemoveTagCheckedBefore(ctx, "a", t0.Add(time.Second))
	testkit.Must(t, err, "RemoveTagCheckedBefore")
	o, _ := s.Get(ctx, "old")
	nw, _ := s.Get(ctx, "new")
	l, _ := s.Get(ctx, "legacy")
	if n != 2 || strings.Join(o.TagsIDs, ",") != "b" || strings.Join(nw.TagsIDs, ",") != "a" || len(l.TagsIDs) != 0 {
		t.Errorf("removed %d: old %v, new %v, legacy %v; want a gone from old and legacy only", n, o.TagsIDs, nw.TagsIDs, l.TagsIDs)
	}
}
