package document

import (
	"strings"
	"testing"
	"time"
)

func TestDropDeletedTags(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	anew := t0.Add(time.Hour)
	tests := []struct {
		name string
		d    Document
		want string
	}{
		{"gone for good", Document{TagsIDs: []string{"a", "x", "b"}, TagSince: map[string]time.Time{"a": t0, "b": t0}}, "x"},
		{"checked against the old tag", Document{TagsIDs: []string{"n"}, TagSince: map[string]time.Time{"n": t0}}, ""},
		{"checked against the new tag", Document{TagsIDs: []string{"n"}, TagSince: map[string]time.Time{"n": anew}}, "n"},
		{"no stamp, written before the new tag", Document{TagsIDs: []string{"n"}, UpdatedAt: t0}, ""},
		{"no stamp, written after the new tag", Document{TagsIDs: []string{"n"}, UpdatedAt: anew.Add(time.Second)}, "n"},
		{"not named", Document{TagsIDs: []string{"x"}}, "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.d.Clone()
			changed := dropDeletedTags(&d, []string{"a", "b", "n"}, map[string]time.Time{"n": anew})
			if got := strings.Join(d.TagsIDs, ","); got != tt.want || changed != (got != strings.Join(tt.d.TagsIDs, ",")) {
				t.Errorf("tags %q (changed %v), want %q", got, changed, tt.want)
			}
			for id := range d.TagSince {
				if !strings.Contains(","+tt.want+",", ","+id+",") {
					t.Errorf("TagSince keeps %s, which is no longer named", id)
				}
			}
		})
	}
}

func TestDropMedia(t *testing.T) {
	d := Document{Type: PDF, File: &File{ID: "f"}, ImagesIDs: []string{}}
	if !dropMedia(&d, []string{"f"}) || d.File != nil {
		t.Errorf("file not dropped: %+v", d)
	}
	m := Document{Type: Markdown, ImagesIDs: []string{"i", "j"}}
	if !dropMedia(&m, []string{"j", "k"}) || strings.Join(m.ImagesIDs, ",") != "i" {
		t.Errorf("images %v, want [i]", m.ImagesIDs)
	}
	if dropMedia(&m, []string{"k"}) {
		t.Error("dropping a media not named reported a change")
	}
}
