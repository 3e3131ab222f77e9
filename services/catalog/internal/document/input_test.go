package document

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/validation"
)

// fakeRefs stands in for taxonomy and media in these pure rule tests; the
// real services are exercised end to end in the e2e module.
type fakeRefs struct {
	tags   map[string]bool
	medias map[string]Media
	err    error
}

func (f fakeRefs) Tags(_ context.Context, ids []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, id := range ids {
		if f.tags[id] {
			out[id] = time.Time{}
		}
	}
	return out, f.err
}

func (f fakeRefs) Medias(_ context.Context, ids []string) (map[string]Media, error) {
	out := map[string]Media{}
	for _, id := range ids {
		if m, ok := f.medias[id]; ok {
			out[id] = m
		}
	}
	return out, f.err
}

var refs = fakeRefs{
	tags: map[string]bool{"t1": true, "t2": true},
	medias: map[string]Media{
		"pdf": {ID: "pdf", Name: "guide.pdf", MimeType: "application/pdf"},
		"png": {ID: "png", Name: "a.png", MimeType: "image/png"},
	},
}

// check is what a write checks, but the pins (they need a store).
var check = Validate

func failing(t *testing.T, err error) string {
	t.Helper()
	var v validation.Errors
	if !errors.As(err, &v) {
		t.Fatalf("err = %v, want validation errors", err)
	}
	var f []string
	for _, e := range v {
		f = append(f, e.Field)
	}
	return strings.Join(f, ",")
}

func TestCheckVariants(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		in   Input
		bad  string // failing fields, "" when valid
	}{
		{"pdf", Input{Type: "PDF", Title: "T", FileID: "pdf"}, ""},
		{"link", Input{Type: "LINK", Title: "T", URL: "https://example.org/a?b=c"}, ""},
		{"markdown", Input{Type: "MARKDOWN", Title: "T", Content: "# hi", ImagesIDs: []string{"png"}}, ""},
		{"html", Input{Type: "HTML", Title: "T", Content: "<p>hi</p>"}, ""},
		{"no type", Input{Title: "T"}, "type"},
		{"bad type", Input{Type: "VIDEO", Title: "T"}, "type"},
		{"lower-case type", Input{Type: "pdf", Title: "T", FileID: "pdf"}, "type"},
		{"blank title", Input{Type: "LINK", Title: "  ", URL: "http://x.org"}, "title"},
		{"long title", Input{Type: "LINK", Title: strings.Repeat("é", 301), URL: "http://x.org"}, "title"},
		{"300 chars ok", Input{Type: "LINK", Title: strings.Repeat("é", 300), URL: "http://x.org"}, ""},
		{"javascript url", Input{Type: "LINK", Title: "T", URL: "javascript:alert(1)"}, "url"},
		{"relative url", Input{Type: "LINK", Title: "T", URL: "/a/b"}, "url"},
		{"ftp url", Input{Type: "LINK", Title: "T", URL: "ftp://x.org/f"}, "url"},
		{"no host", Input{Type: "LINK", Title: "T", URL: "http:///path"}, "url"},
		{"userinfo", Input{Type: "LINK", Title: "T", URL: "https://u:p@x.org"}, "url"},
		{"long url", Input{Type: "LINK", Title: "T", URL: "https://x.org/" + strings.Repeat("a", 2048)}, "url"},
		{"missing url", Input{Type: "LINK", Title: "T"}, "url"},
		{"missing content", Input{Type: "MARKDOWN", Title: "T"}, "content"},
		{"content too big", Input{Type: "HTML", Title: "T", Content: strings.Repeat("a", MaxContent+1)}, "content"},
		{"too many sources", Input{Type: "MARKDOWN", Title: "T", Content: "x", Sources: make([]string, 101)}, "sources"},
		{"long source", Input{Type: "MARKDOWN", Title: "T", Content: "x", Sources: []string{"ok", strings.Repeat("s", 2001)}}, "sources[1]"},
		{"unknown tag", Input{Type: "LINK", Title: "T", URL: "http://x.org", TagsIDs: []string{"t1", "zz"}}, "tagsIds[1]"},
		{"too many tags", Input{Type: "LINK", Title: "T", URL: "http://x.org", TagsIDs: manyIDs(101)}, "tagsIds"},
		{"missing file", Input{Type: "PDF", Title: "T"}, "fileId"},
		{"unknown file", Input{Type: "PDF", Title: "T", FileID: "nope"}, "fileId"},
		{"file not a pdf", Input{Type: "PDF", Title: "T", FileID: "png"}, "fileId"},
		{"image not an image", Input{Type: "HTML", Title: "T", Content: "x", ImagesIDs: []string{"png", "pdf"}}, "imagesIds[1]"},
		{"everything at once", Input{Type: "LINK", Title: "", URL: "nope", TagsIDs: []string{"zz"}}, "title,url,tagsIds[0]"},
		{"port out of range", Input{Type: "LINK", Title: "T", URL: "http://x.org:99999/"}, "url"},
		{"port zero", Input{Type: "LINK", Title: "T", URL: "http://x.org:0/"}, "url"},
		{"port ok", Input{Type: "LINK", Title: "T", URL: "http://x.org:8080/"}, ""},
		{"sanitised content too big", Input{Type: "HTML", Title: "T",
			Content: strings.Repeat(`<a href="http://a.b/">x</a>`, MaxContent/len(`<a href="http://a.b/">x</a>`))}, "content"},
		{"huge tag id", Input{Type: "LINK", Title: "T", URL: "http://x.org", TagsIDs: []string{"t1", strings.Repeat("t", 1<<20)}}, "tagsIds[1]"},
		{"huge media id", Input{Type: "PDF", Title: "T", FileID: strings.Repeat("m", 1<<20)}, "fileId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := check(ctx, refs, tt.in)
			if tt.bad == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			if got := failing(t, err); got != tt.bad {
				t.Errorf("failing fields = %s, want %s (%v)", got, tt.bad, err)
			}
		})
	}
}

func manyIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strings.Repeat("x", i+1)
	}
	return out
}

func TestCheckFillsTheVariant(t *testing.T) {
	d, err := check(context.Background(), refs, Input{
		Type: "PDF", Title: "  Guide ", FileID: "pdf", TagsIDs: []string{"t2", "t1", "t2"},
		URL: "http://ignored.org", Content: "ignored", Sources: []string{"ignored"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d.Title != "Guide" || d.File == nil || d.File.Name != "guide.pdf" || d.URL != "" || d.Content != "" || d.Sources != nil {
		t.Errorf("pdf document = %+v", d)
	}
	if strings.Join(d.TagsIDs, ",") != "t2,t1" {
		t.Errorf("tagsIds = %v, want duplicates dropped in order", d.TagsIDs)
	}
	d, _ = check(context.Background(), refs, Input{Type: "MARKDOWN", Title: "T", Content: "x"})
	if d.Sources == nil || d.ImagesIDs == nil || d.TagsIDs == nil {
		t.Errorf("lists must be empty, not nil: %+v", d)
	}
}

func TestDependencyDownIsNotAValidationError(t *testing.T) {
	down := fakeRefs{err: &UnavailableError{Service: "taxonomy", Err: errors.New("refused")}}
	_, err := check(context.Background(), down, Input{Type: "LINK", Title: "T", URL: "http://x.org", TagsIDs: []string{"t1"}})
	var u *UnavailableError
	if !errors.As(err, &u) {
		t.Errorf("err = %v, want *UnavailableError", err)
	}
}

func TestSanitizeHTML(t *testing.T) {
	in := `<h1>Title</h1><p onclick="x()">Hi <a href="javascript:alert(1)">bad</a> <a href="https://ok.org">ok</a></p>` +
		`<script>alert(1)</script><iframe src="https://evil"></iframe><img src="https://i.org/a.png" onerror="x()">` +
		`<table><tr><td>cell</td></tr></table><ul><li>item</li></ul><style>body{}</style><p style="background:url(javascript:x)">s</p>`
	out := mustHTML(t, in)
	for _, bad := range []string{"<script", "onclick", "javascript:", "<iframe", "onerror", "<style", "style="} {
		if strings.Contains(out, bad) {
			t.Errorf("sanitised HTML still has %q: %s", bad, out)
		}
	}
	for _, good := range []string{"<h1>Title</h1>", `href="https://ok.org"`, "<img", "<table>", "<li>item</li>"} {
		if !strings.Contains(out, good) {
			t.Errorf("sanitised HTML lost %q: %s", good, out)
		}
	}
}

func TestHTMLWithNothingSafeLeft(t *testing.T) {
	_, err := check(context.Background(), refs, Input{Type: "HTML", Title: "T", Content: "<script>alert(1)</script>"})
	if got := failing(t, err); got != "content" {
		t.Errorf("failing fields = %s, want content", got)
	}
}
