package pages

import (
	"slices"
	"testing"
)

func TestMerge(t *testing.T) {
	base := form{Type: "LINK", Title: "Old", URL: "https://a", TagIDs: []string{"t1"}}
	theirs := base
	theirs.TagIDs = []string{"t1", "t2"} // they changed only the tags
	typed := base
	typed.Title = "Mine"
	typed.TagIDs = []string{"t1"}

	c := merge(&typed, &base, theirs)
	if !slices.Equal(typed.TagIDs, []string{"t1", "t2"}) || typed.Title != "Mine" {
		t.Errorf("merged form %+v, want their tags and my title", typed)
	}
	if !slices.Equal(c.Kept, []string{"Tags"}) || !slices.Equal(c.Differs, []string{"Title"}) || c.Both != nil {
		t.Errorf("conflict %+v", c)
	}

	both := base
	both.Title, both.TagIDs = "Mine", []string{"t3"}
	c = merge(&both, &base, theirs)
	if !slices.Equal(both.TagIDs, []string{"t3"}) || !slices.Equal(c.Both, []string{"Tags"}) || !slices.Equal(c.Differs, []string{"Title", "Tags"}) {
		t.Errorf("both changed the tags: form %+v, conflict %+v", both, c)
	}

	noBase := base
	c = merge(&noBase, nil, theirs)
	if !slices.Equal(noBase.TagIDs, []string{"t1"}) || !slices.Equal(c.Differs, []string{"Tags"}) {
		t.Errorf("without a base: form %+v, conflict %+v", noBase, c)
	}

	reordered := base
	reordered.TagIDs = []string{"t2", "t1"}
	if c = merge(&reordered, &base, theirs); len(c.Differs) != 0 {
		t.Errorf("the same tags in another order differ: %+v", c)
	}
}

func TestVersionOf(t *testing.T) {
	for etag, want := range map[string]int64{`"7"`: 7, `"12.ab34"`: 12, `W/"3.x"`: 3, `""`: 0, `"x"`: 0} {
		if got, _ := versionOf(etag); got != want {
			t.Errorf("versionOf(%s) = %d, want %d", etag, got, want)
		}
	}
}
