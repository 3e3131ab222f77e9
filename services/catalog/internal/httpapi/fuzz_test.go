package httpapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/validation"
	"github.com/doclib/services/catalog/internal/document"
)

// everyRef knows every id: a media id starting with "pdf" is a PDF, any
// other an image; a tag id starting with "x" is unknown.
type everyRef struct{}

func (everyRef) Tags(_ context.Context, ids []string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	for _, id := range ids {
		if !strings.HasPrefix(id, "x") {
			out[id] = time.Unix(0, 0)
		}
	}
	return out, nil
}

func (everyRef) Medias(_ context.Context, ids []string) (map[string]document.Media, error) {
	out := map[string]document.Media{}
	for _, id := range ids {
		m := document.Media{ID: id, Name: id, MimeType: "image/png"}
		if strings.HasPrefix(id, "pdf") {
			m.MimeType = document.PDFMimeType
		}
		out[id] = m
	}
	return out, nil
}

// FuzzDocumentBody runs the body of a document create or update through
// the JSON binding and the document rules: nothing panics, a refusal is a
// 400 or a list of field errors, and what is accepted obeys the contract's
// limits and is stable (validating the stored document again changes
// nothing, as a client sending it back in a PATCH would).
func FuzzDocumentBody(f *testing.F) {
	for _, b := range []string{
		`{"type":"PDF","title":"Guide","fileId":"pdf1","tagsIds":["a","b","a"]}`,
		`{"type":"LINK","title":" Site ","url":"HTTPS://Bücher.example/café"}`,
		`{"type":"MARKDOWN","title":"T","content":"# x\n<script>y</script>[l](javascript:z)","sources":["s"],"imagesIds":["img1"]}`,
		`{"type":"HTML","title":"T","content":"<p onclick=x>hi</p>"}`,
		`{"type":"LINK","title":"evil\u202egpj","url":"https://evil\u202e.com"}`,
		`{"TYPE":"LINK","type":"LINK","type":"PDF"}`, `{"type":"MARKDOWN","title":"\u200b","content":" ","sources":[null]}`,
		`{"type":"HTML","title":"T","content":"<script>x</script>","tagsIds":["xunknown"],"imagesIds":["pdf2"]}`,
	} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var in documentInput
		if p := httpx.DecodeJSON(body, &in); p != nil {
			if p.Status != 400 {
				t.Fatalf("binding %q: %+v", body, p)
			}
			return
		}
		d, err := document.Validate(context.Background(), everyRef{}, in.domain())
		var verrs validation.Errors
		if err != nil {
			if !errors.As(err, &verrs) || len(verrs) == 0 {
				t.Fatalf("Validate(%q) = %v, want field errors", body, err)
			}
			return
		}
		if n := utf8.RuneCountInString(d.Title); n < 1 || n > document.MaxTitle || validation.Trim(d.Title) != d.Title || validation.UnsafeText(d.Title) != "" {
			t.Fatalf("Validate(%q) accepted the title %q", body, d.Title)
		}
		if len(d.TagsIDs) > document.MaxTags || len(d.ImagesIDs) > document.MaxImages || len(d.Sources) > document.MaxSources {
			t.Fatalf("Validate(%q) accepted lists over their limits", body)
		}
		switch d.Type {
		case document.Link:
			if again, msg := validation.HTTPURL(d.URL); msg != "" || again != d.URL || len(d.URL) > document.MaxURL {
				t.Fatalf("Validate(%q) stored the url %q, which normalises to %q (%s)", body, d.URL, again, msg)
			}
		case document.Markdown, document.HTML:
			if strings.TrimSpace(d.Content) == "" || len(d.Content) > document.MaxContent {
				t.Fatalf("Validate(%q) stored the content %q", body, d.Content)
			}
		case document.PDF:
			if d.File == nil {
				t.Fatalf("Validate(%q) stored a PDF without its file", body)
			}
		}
		resent := document.Input{Type: string(d.Type), Title: d.Title, TagsIDs: d.TagsIDs, URL: d.URL,
			Content: d.Content, Sources: d.Sources, ImagesIDs: d.ImagesIDs}
		if d.File != nil {
			resent.FileID = d.File.ID
		}
		again, err := document.Validate(context.Background(), everyRef{}, resent)
		if err != nil || again.Title != d.Title || again.URL != d.URL || again.Content != d.Content {
			t.Fatalf("the stored document of %q does not validate to itself: %v\n%+v\n%+v", body, err, d, again)
		}
	})
}
