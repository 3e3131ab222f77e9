package document_test

import (
	"slices"
	"testing"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// Every change announces what it did; a write that changed nothing an
// outsider sees announces nothing.
func TestEveryChangeIsAnEvent(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	live := document.Document{ID: "d", Seq: 3, Type: document.Link, Title: "T", URL: "https://x.org", Status: document.Published, PublishedAt: t0}
	draft := live
	draft.Status, draft.PublishedAt = document.Draft, time.Time{}
	with := func(d document.Document, f func(*document.Document)) document.Document {
		d = d.Clone()
		f(&d)
		return d
	}
	for _, c := range []struct {
		name          string
		before, after document.Document
		want          []document.Event
	}{
		{"create", document.Document{ID: "d"}, live, []document.Event{document.Created}},
		{"live edit", live, with(live, func(d *document.Document) { d.Title = "U" }), []document.Event{document.Updated}},
		{"draft edit", draft, with(draft, func(d *document.Document) { d.Title = "U" }), []document.Event{document.DraftSaved}},
		{"pending changes", live, with(live, func(d *document.Document) { p := d.Clone(); p.Title = "U"; d.Draft = &p }), []document.Event{document.DraftSaved}},
		{"scheduled", draft, with(draft, func(d *document.Document) { d.PublishAt = t0.Add(time.Hour) }), []document.Event{document.Scheduled}},
		{"draft edit and schedule", draft, with(draft, func(d *document.Document) { d.Title, d.PublishAt = "U", t0.Add(time.Hour) }),
			[]document.Event{document.DraftSaved, document.Scheduled}},
		{"published", draft, with(draft, func(d *document.Document) { d.Status, d.PublishedAt = document.Published, t0 }), []document.Event{document.Publication}},
		{"unpublished", live, draft, []document.Event{document.Unpublication}},
		{"deleted", live, with(live, func(d *document.Document) { d.IsDeleted = true }), []document.Event{document.Deleted}},
		{"restored", with(live, func(d *document.Document) { d.IsDeleted = true }), live, []document.Event{document.Restored}},
		{"only the record", live, with(live, func(d *document.Document) { d.Version++; d.TagsIDs = []string{} }), nil},
	} {
		if got := document.Events(c.before, c.after); !slices.Equal(got, c.want) {
			t.Errorf("%s: events %v, want %v", c.name, got, c.want)
		}
	}
}
