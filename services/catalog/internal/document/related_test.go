package document

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRelated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Hour) }
	docs := map[string]*Document{}
	add := func(id string, created int, deleted bool, tags ...string) *Document {
		d := &Document{ID: id, TagsIDs: tags, CreatedAt: at(created), IsDeleted: deleted}
		docs[id] = d
		return d
	}
	d := add("d", 0, false, "a", "b", "c")
	d.RelatedIDs = []string{"pin2", "gone", "dead", "d", "pin1", "pin2"}
	add("pin1", 1, false)
	add("pin2", 2, false, "a")
	add("dead", 3, true, "a", "b", "c")
	add("three", 4, false, "a", "b", "c")
	add("two-old", 5, false, "a", "b")
	add("two-new", 9, false, "b", "c")
	add("one-near", 6, false, "x")          // shares none of d's tags
	add("one-far", 7, false, "c")           // category k2
	add("one-near-old", 8, false, "b", "y") // b is in d's first tag's category
	add("none", 10, false, "z")
	category := map[string]string{"a": "k1", "b": "k1", "c": "k2", "x": "k1", "y": "k3"}
	get := func(id string) (*Document, bool) { o, ok := docs[id]; return o, ok }
	var sharing []*Document // once per tag shared, as a replica lists them
	for _, o := range docs {
		for _, tg := range o.TagsIDs {
			if slices.Contains(d.TagsIDs, tg) {
				sharing = append(sharing, o)
			}
		}
	}
	got := Related(d, get, sharing, func(tag string) string { return category[tag] })
	var ids []string
	for _, o := range got {
		ids = append(ids, o.ID)
	}
	// Pins first (live ones, in order, once), then by shared tags, then
	// near the first tag's category, then newest; at most 5.
	if want := "pin2,pin1,three,two-new,two-old"; strings.Join(ids, ",") != want {
		t.Errorf("Related = %v, want %s", ids, want)
	}
	d.RelatedIDs = nil
	got = Related(d, get, sharing, func(tag string) string { return category[tag] })
	ids = nil
	for _, o := range got {
		ids = append(ids, o.ID)
	}
	if want := "three,two-new,two-old,one-near-old,pin2"; strings.Join(ids, ",") != want {
		t.Errorf("Related without pins = %v, want %s", ids, want)
	}
	if got := Related(&Document{ID: "lonely"}, get, sharing, func(string) string { return "" }); len(got) != 0 {
		t.Errorf("a document without tags or pins has related %v", got)
	}
}
