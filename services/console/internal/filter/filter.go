// Package filter owns the back-office listing rules of the seed (spec §4.5):
// selected tags of one category combine with OR, different categories
// with AND; free text matches the title and the names of the document's
// tags; deleted documents are hidden unless asked for. The browser script
// (pages/static/console.js) applies the same rules to the rendered rows;
// this package is the server-side version used without JavaScript, and
// the reference the script is tested against.
package filter

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Doc is what the rules look at in a document.
type Doc struct {
	Title     string
	TagIDs    []string
	IsDeleted bool
}

// Criteria is what the person asked for.
type Criteria struct {
	// TagIDs are the selected tags, from any categories.
	TagIDs []string
	// Text is the free-text search, matched case- and accent-form-insensitively.
	Text string
	// Deleted shows deleted documents only (the deleted view); otherwise
	// only live ones are shown.
	Deleted bool
}

// Index knows each tag's category and name.
type Index struct {
	category map[string]string
	name     map[string]string
}

// NewIndex returns an empty index; Add fills it.
func NewIndex() *Index {
	return &Index{category: map[string]string{}, name: map[string]string{}}
}

// Add records tag id with its name in category.
func (ix *Index) Add(id, name, category string) {
	ix.category[id] = category
	ix.name[id] = name
}

// Rule is Criteria prepared for matching many documents.
type Rule struct {
	groups  map[string]map[string]bool // category -> selected tag ids
	text    string
	deleted bool
	ix      *Index
}

// Prepare groups the selected tags by category. A selected tag the index
// does not know (deleted meanwhile) is its own group, which no document
// can satisfy: the result is empty rather than silently wider.
func (ix *Index) Prepare(c Criteria) Rule {
	r := Rule{groups: map[string]map[string]bool{}, text: Fold(c.Text), deleted: c.Deleted, ix: ix}
	for _, id := range c.TagIDs {
		cat, ok := ix.category[id]
		if !ok {
			cat = "\x00unknown:" + id
		}
		if r.groups[cat] == nil {
			r.groups[cat] = map[string]bool{}
		}
		r.groups[cat][id] = true
	}
	return r
}

// Match reports whether d is shown.
func (r Rule) Match(d Doc) bool {
	if d.IsDeleted != r.deleted {
		return false
	}
	for _, selected := range r.groups {
		if !hasAny(d.TagIDs, selected) {
			return false
		}
	}
	return r.text == "" || strings.Contains(r.Haystack(d), r.text)
}

// Haystack is the folded text free-text search looks in: the title and
// the names of the document's tags, one per line (so a search never
// matches across two of them).
func (r Rule) Haystack(d Doc) string {
	parts := []string{d.Title}
	for _, id := range d.TagIDs {
		if n, ok := r.ix.name[id]; ok {
			parts = append(parts, n)
		}
	}
	return Fold(strings.Join(parts, "\n"))
}

func hasAny(ids []string, selected map[string]bool) bool {
	for _, id := range ids {
		if selected[id] {
			return true
		}
	}
	return false
}

// Fold is the comparison form of text: NFC, lower case, trimmed, as the
// browser script folds it (normalize("NFC").toLowerCase().trim()).
func Fold(s string) string {
	return strings.TrimSpace(strings.ToLower(norm.NFC.String(s)))
}
