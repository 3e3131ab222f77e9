package pages

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
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

// TestMergeWhatTheBrowserSends: a browser sends a textarea with CRLF line
// ends (the stored content has LF) and a <select multiple> in listing
// order; neither is a change by the person who only edited the tags.
func TestMergeWhatTheBrowserSends(t *testing.T) {
	base := form{Type: "TEXT", Title: "T", Content: "<p>a</p>\n<p>b</p>", Sources: "s1\ns2",
		TagIDs: []string{"t1"}, RelatedIDs: []string{"d1", "d2"}}
	theirs := base // B changed the content and the pins
	theirs.Content, theirs.RelatedIDs = "<p>a</p>\n<p>B's</p>", []string{"d1", "d2", "d3"}

	// A changed only the tags; the browser sent the rest as it was opened.
	typed := posted(t, url.Values{"type": {"TEXT"}, "title": {"T"}, "content": {"<p>a</p>\r\n<p>b</p>"},
		"sources": {"s1\r\ns2"}, "tag": {"t1", "t2"}, "related": {"d2", "d1"}})
	if typed.Content != base.Content || typed.Sources != base.Sources {
		t.Errorf("typed content %q, sources %q: CRLF not read as LF", typed.Content, typed.Sources)
	}
	c := merge(&typed, &base, theirs)
	if typed.Content != theirs.Content || !slices.Equal(typed.RelatedIDs, theirs.RelatedIDs) {
		t.Errorf("merged form %+v, want B's content and pins", typed)
	}
	if c.Both != nil || !slices.Equal(c.Kept, []string{"Content", "Pinned related documents"}) {
		t.Errorf("conflict %+v, want B's content and pins kept, nothing changed by both", c)
	}

	samePins := base
	samePins.RelatedIDs = []string{"d2", "d1"}
	if c = merge(&samePins, &base, base); len(c.Differs) != 0 {
		t.Errorf("the same pins in another order differ: %+v", c)
	}
}

// posted is typed() of a form posted with values.
func posted(t *testing.T, values url.Values) form {
	t.Helper()
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/documents/d", strings.NewReader(values.Encode()))
	c.Request.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if err := parseForm(c); err != nil {
		t.Fatal(err)
	}
	return typed(c)
}

func TestVersionOf(t *testing.T) {
	for etag, want := range map[string]int64{`"7"`: 7, `"12.ab34"`: 12, `W/"3.x"`: 3, `""`: 0, `"x"`: 0} {
		if got, _ := versionOf(etag); got != want {
			t.Errorf("versionOf(%s) = %d, want %d", etag, got, want)
		}
	}
}
