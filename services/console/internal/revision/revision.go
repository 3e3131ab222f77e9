// Package revision owns how the console tells a document's history: the
// reason of each write in words, and which fields a write changed,
// compared with the revision before it.
package revision

import (
	"encoding/json"
	"reflect"
	"strings"
)

// reasons are the API's "why" of a revision (the route, "schedule",
// "import", or "event <subject>") in words.
var reasons = map[string]string{
	"POST /bo/documents":                            "created",
	"PATCH /bo/documents/:id":                       "edited",
	"DELETE /bo/documents/:id":                      "deleted",
	"POST /bo/documents/:id/restore":                "restored from the deleted documents",
	"POST /bo/documents/:id/revisions/:rev/restore": "an earlier version restored",
	"POST /bo/documents/:id/publish":                "published",
	"POST /bo/documents/:id/unpublish":              "unpublished (back to draft)",
	"DELETE /bo/documents/:id/draft":                "pending changes discarded",
	"schedule":                                      "published or unpublished as scheduled",
	"import":                                        "imported",
	"event library.taxonomy.tag.deleted":            "a tag it had was deleted",
	"event library.taxonomy.category.deleted":       "a category it had tags of was deleted",
	"event library.media.deleted":                   "a media it used was deleted",
	"event library.catalog.document.purged":         "a document it pinned was purged",
}

// Reason is why in words; a reason the console does not know yet is
// shown as the API says it.
func Reason(why string) string {
	if r, ok := reasons[why]; ok {
		return r
	}
	if ev, ok := strings.CutPrefix(why, "event "); ok {
		return "changed by the library (" + ev + ")"
	}
	return why
}

// fields are the document fields a person edits or the workflow moves, in
// the order a change lists them, with their names in words.
var fields = []struct{ key, name string }{
	{"title", "title"}, {"url", "address"}, {"file", "file"}, {"content", "content"},
	{"sources", "sources"}, {"tagsIds", "tags"}, {"imagesIds", "images"}, {"relatedIds", "pinned documents"},
	{"status", "status"}, {"isDeleted", "deletion"}, {"publishAt", "scheduled publication"},
	{"unpublishAt", "scheduled unpublication"}, {"draft", "pending changes"},
}

// Changes names the fields that differ between two revisions of a
// document (the API's JSON objects); before nil is the first revision,
// which changed nothing but made the document.
func Changes(before, after json.RawMessage) []string {
	if before == nil {
		return nil
	}
	var a, b map[string]any
	if json.Unmarshal(before, &a) != nil || json.Unmarshal(after, &b) != nil {
		return nil
	}
	var out []string
	for _, f := range fields {
		if !reflect.DeepEqual(empty(a[f.key]), empty(b[f.key])) {
			out = append(out, f.name)
		}
	}
	return out
}

// empty makes an absent field, null, false and an empty list or text the same:
// the API leaves out what a type does not have.
func empty(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		if len(x) == 0 {
			return nil
		}
	case string:
		if x == "" {
			return nil
		}
	case bool:
		if !x {
			return nil
		}
	}
	return v
}
