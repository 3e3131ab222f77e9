package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// bundle is what a test reads of GET /public/bundle.
type bundle struct {
	Cursor string   `json:"cursor"`
	Tags   []string `json:"tags"`
	Config struct {
		ModeratorEmail string `json:"moderatorEmail"`
	} `json:"config"`
	TagCategories []struct {
		ID string `json:"id"`
	} `json:"tagCategories"`
	FilesSize int64 `json:"filesSize"`
	Files     []struct {
		ID         string            `json:"id"`
		Size       int64             `json:"size"`
		SHA256     string            `json:"sha256"`
		PageCount  int               `json:"pageCount"`
		Text       string            `json:"text"`
		Renditions map[string]string `json:"renditions"`
	} `json:"files"`
	Documents []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	} `json:"documents"`
	Details []struct {
		ID      string  `json:"id"`
		Type    string  `json:"type"`
		Content *string `json:"content"`
		Text    string  `json:"text"`
		File    *struct {
			ID string `json:"id"`
		} `json:"file"`
	} `json:"details"`
}

func (b bundle) documentIDs() []string {
	var ids []string
	for _, d := range b.Documents {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	return ids
}

func (b bundle) detailIDs() []string {
	var ids []string
	for _, d := range b.Details {
		ids = append(ids, d.ID)
	}
	slices.Sort(ids)
	return ids
}

func sorted(ids ...string) []string { slices.Sort(ids); return ids }

// TestBundleThenSync is an app's first start as the app developer guide
// shows it: a PDF, a MARKDOWN and a LINK document; the bundle holds them
// all with the PDF's file record (its size, SHA-256, page count, text and
// cover addresses), the settings and the categories; revalidated, it is
// 304; gzipped, the same bytes; pinned to a tag, the details and files of
// that tag's documents only. Then a write, a change and a deletion: the
// sync from the bundle's cursor brings all three, and the bundle changes.
func TestBundleThenSync(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"C"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"pdfs","name":"PDFs","categoryId":"c"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"notes","name":"Notes","categoryId":"c"}`, 201)
	file := st.Upload("guide.pdf", pdfOfPages(3))
	create := func(body map[string]any) string {
		var d docJSON
		st.Must("POST", "/bo/documents", body, 201).JSON(t, &d)
		return d.ID
	}
	pdf := create(map[string]any{"type": "PDF", "title": "Guide", "fileId": file, "tagsIds": []string{"pdfs"}})
	md := create(map[string]any{"type": "MARKDOWN", "title": "Note", "content": "# Hello\n\nA *fine* [day](https://x.org).", "tagsIds": []string{"notes"}})
	link := create(map[string]any{"type": "LINK", "title": "Link", "url": "https://x.org"})

	// Go's client asks for gzip and decompresses by itself unless told.
	identity := []string{"Accept-Encoding", "identity"}
	r := st.Req("GET", "/public/bundle", nil, identity...)
	if r.Status != 200 || r.Header.Get("ETag") == "" || r.Header.Get("Content-Length") == "" {
		t.Fatalf("GET /public/bundle: %d %v %s", r.Status, r.Header, r.Body)
	}
	var b bundle
	r.JSON(t, &b)
	if !slices.Equal(b.documentIDs(), sorted(pdf, md, link)) || !slices.Equal(b.detailIDs(), sorted(pdf, md, link)) ||
		len(b.TagCategories) != 1 || b.Config.ModeratorEmail == "" || b.Cursor == "" || b.Tags == nil {
		t.Fatalf("the bundle does not hold the library: %s", r.Body)
	}
	if len(b.Files) != 1 || b.Files[0].ID != file || b.Files[0].Size == 0 || b.FilesSize != b.Files[0].Size ||
		len(b.Files[0].SHA256) != 64 || b.Files[0].PageCount != 3 || b.Files[0].Text == "" || b.Files[0].Renditions["thumb"] == "" {
		t.Errorf("the bundle's files: %+v, filesSize %d; want the PDF's record with its size, SHA-256, pages, text and cover", b.Files, b.FilesSize)
	}
	for _, d := range b.Details {
		if d.ID == md && (d.Text != "/public/documents/"+md+"/text" || d.Content == nil) {
			t.Errorf("the MARKDOWN detail: %+v; want its content and the address of its words", d)
		}
	}
	if words := st.Req("GET", "/public/documents/"+md+"/text", nil); words.Status != 200 || string(words.Body) != "Hello\nA fine day." {
		t.Errorf("the words of the MARKDOWN document: %d %q", words.Status, words.Body)
	}
	etag := r.Header.Get("ETag")
	if again := st.Req("GET", "/public/bundle", nil, "Accept-Encoding", "identity", "If-None-Match", etag); again.Status != 304 || again.Header.Get("ETag") != etag {
		t.Errorf("revalidated: %d ETag %q; want 304 %s", again.Status, again.Header.Get("ETag"), etag)
	}
	gz := st.Req("GET", "/public/bundle", nil, "Accept-Encoding", "gzip")
	if gz.Status != 200 || gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("ETag") == etag || !strings.Contains(gz.Header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("gzip: %d %v", gz.Status, gz.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.Body))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := io.ReadAll(zr); err != nil || !bytes.Equal(plain, r.Body) {
		t.Errorf("the gzipped bundle is not the bundle: %v", err)
	}
	if st.Req("GET", "/public/bundle", nil, "Accept-Encoding", "gzip", "If-None-Match", gz.Header.Get("ETag")).Status != 304 {
		t.Error("the gzipped bundle's ETag does not revalidate")
	}

	if zs := st.Req("GET", "/public/bundle", nil, "Accept-Encoding", "zstd, gzip;q=0.5"); zs.Status != 200 || zs.Header.Get("Content-Encoding") != "zstd" ||
		zs.Header.Get("ETag") == etag || zs.Header.Get("ETag") == gz.Header.Get("ETag") {
		t.Errorf("zstd preferred: %d %v; want zstd with an ETag of its own", zs.Status, zs.Header)
	}

	var pinned bundle
	pr := st.Req("GET", "/public/bundle?tags="+url.QueryEscape("pdfs"), nil, identity...)
	pr.JSON(t, &pinned)
	if pr.Status != 200 || !slices.Equal(pinned.documentIDs(), sorted(pdf, md, link)) || !slices.Equal(pinned.detailIDs(), []string{pdf}) ||
		len(pinned.Files) != 1 || !slices.Equal(pinned.Tags, []string{"pdfs"}) || pr.Header.Get("ETag") == etag {
		t.Errorf("pinned to a tag: %d %s", pr.Status, pr.Body)
	}
	if bad := st.Req("GET", "/public/bundle?tags=a,,b", nil); bad.Status != 400 || bad.Problem(t).Code != "bad_request" {
		t.Errorf("a malformed filter: %d %s", bad.Status, bad.Body)
	}

	// Written after the bundle: the sync from its cursor brings each.
	fresh := create(map[string]any{"type": "LINK", "title": "Fresh", "url": "https://x.org"})
	st.Must("PATCH", "/bo/documents/"+link, map[string]any{"type": "LINK", "title": "Link 2", "url": "https://x.org"}, 200)
	st.Must("DELETE", "/bo/documents/"+md, nil, 204)
	got, removed := map[string]string{}, []string{}
	for cursor := b.Cursor; ; {
		p, r := st.sync(cursor)
		if r.Status != 200 {
			t.Fatalf("sync from the bundle's cursor: %d %s", r.Status, r.Body)
		}
		for _, d := range p.Documents {
			got[d.ID] = d.Title
		}
		removed = append(removed, p.Removed...)
		cursor = p.Cursor
		if !p.HasMore {
			break
		}
	}
	if got[fresh] != "Fresh" || got[link] != "Link 2" || !slices.Contains(removed, md) {
		t.Errorf("sync from the bundle's cursor: %v removed %v; want %s (new), %s (changed), %s removed", got, removed, fresh, link, md)
	}
	if after := st.Req("GET", "/public/bundle", nil, "Accept-Encoding", "identity", "If-None-Match", etag); after.Status != 200 {
		t.Errorf("the bundle after writes revalidated with the old ETag: %d", after.Status)
	}
	if pdfWords := st.Req("GET", "/public/documents/"+pdf+"/text", nil); pdfWords.Status != 404 || !strings.Contains(fmt.Sprint(pdfWords.Problem(t).Detail), file) {
		t.Errorf("a PDF document's words: %d %s; want 404 naming its media's text", pdfWords.Status, pdfWords.Body)
	}
}
