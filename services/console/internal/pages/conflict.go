package pages

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
)

// A 412 means someone saved the document after this person opened it.
// Saving the form again as it was typed would put back, silently, every
// field the other person changed and this person did not touch (a tag
// added in another tab, say). So the console merges: the version the form
// was opened on (the base, the revision named by the stale ETag) tells
// which fields each side changed; a field only they changed takes their
// value; a field both changed keeps what was typed and is shown beside
// theirs. Every field that still differs is listed, by name.

// formField is one field of the form that a save sends.
type formField struct {
	Label     string
	get       func(form) []string
	set       func(*form, []string)
	unordered bool // compared as a set
}

func one(s string) []string { return []string{s} }

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// formFields are the fields a save sends, in the page's order.
var formFields = []formField{
	{Label: "Title", get: func(f form) []string { return one(f.Title) }, set: func(f *form, v []string) { f.Title = first(v) }},
	{Label: "Address", get: func(f form) []string { return one(f.URL) }, set: func(f *form, v []string) { f.URL = first(v) }},
	{Label: "File", get: func(f form) []string { return one(f.FileID) }, set: func(f *form, v []string) { f.FileID = first(v) }},
	{Label: "Content", get: func(f form) []string { return one(f.Content) }, set: func(f *form, v []string) { f.Content = first(v) }},
	{Label: "Sources", get: func(f form) []string { return lines(f.Sources) }, set: func(f *form, v []string) { f.Sources = strings.Join(v, "\n") }},
	{Label: "Tags", get: func(f form) []string { return f.TagIDs }, set: func(f *form, v []string) { f.TagIDs = v }, unordered: true},
	{Label: "Attached images", get: func(f form) []string { return f.ImageIDs }, set: func(f *form, v []string) { f.ImageIDs = v }, unordered: true},
	// A <select multiple> sends the pins in listing order, not as stored.
	{Label: "Pinned related documents", get: func(f form) []string { return f.RelatedIDs }, set: func(f *form, v []string) { f.RelatedIDs = v }, unordered: true},
}

func (ff formField) equal(a, b form) bool {
	x, y := ff.get(a), ff.get(b)
	if ff.unordered {
		x, y = slices.Compact(slices.Sorted(slices.Values(x))), slices.Compact(slices.Sorted(slices.Values(y)))
	}
	return slices.Equal(nonNil(x), nonNil(y))
}

// conflict is what the page says about the fields after a 412.
type conflict struct {
	Kept    []string // fields only they changed: the form now holds theirs
	Both    []string // fields both changed: the form holds what was typed
	Differs []string // every field where the form and their version differ
}

// merge puts their value of every field they changed and typed did not
// change into typed. Without a base (it could not be read) nothing is
// merged: every differing field is listed, so nothing is put back unseen.
func merge(typed *form, base *form, theirs form) conflict {
	var c conflict
	for _, ff := range formFields {
		if ff.equal(*typed, theirs) {
			continue
		}
		switch {
		case base == nil:
		case ff.equal(theirs, *base):
		case ff.equal(*typed, *base):
			ff.set(typed, ff.get(theirs))
			c.Kept = append(c.Kept, ff.Label)
			continue
		default:
			c.Both = append(c.Both, ff.Label)
		}
		c.Differs = append(c.Differs, ff.Label)
	}
	return c
}

// versionOf is the document version an ETag names ("7" or "7.abc").
func versionOf(etag string) (int64, bool) {
	v, _, _ := strings.Cut(strings.Trim(strings.TrimPrefix(etag, "W/"), `"`), ".")
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n > 0
}

// base is the form as it was opened: the revision the stale ETag names;
// nil when it cannot be read.
func (p *Pages) base(ctx context.Context, token string, f form) *form {
	v, ok := versionOf(f.ETag)
	if !ok {
		return nil
	}
	r, err := p.cfg.API.Revision(ctx, token, f.ID, v)
	if err != nil {
		return nil
	}
	b := formOf(r.Document, "")
	return &b
}

// TagNames names the tags ids, for the page ("none" for no tag).
func (d editData) TagNames(ids []string) string {
	names := map[string]string{}
	for _, c := range d.Categories {
		for _, t := range c.Tags {
			names[t.ID] = c.Name + ": " + t.Name
		}
	}
	return named(ids, names)
}

// ImageNames names the images ids.
func (d editData) ImageNames(ids []string) string {
	names := map[string]string{}
	for _, m := range d.Images {
		names[m.ID] = m.Name
	}
	return named(ids, names)
}

// DocumentNames names the pinned documents ids.
func (d editData) DocumentNames(ids []string) string {
	names := map[string]string{}
	for _, o := range d.Others {
		names[o.ID] = o.Title
	}
	return named(ids, names)
}

// named joins the names of ids (an id without a name as it is).
func named(ids []string, names map[string]string) string {
	if len(ids) == 0 {
		return "none"
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = cmp.Or(names[id], id)
	}
	return strings.Join(out, ", ")
}
