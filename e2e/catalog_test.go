package e2e

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

// A minimal PDF and PNG: the media service decides the type from the bytes.
var (
	pdfBytes = []byte("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n" + strings.Repeat("pdf body ", 200))
	pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"), make([]byte, 64)...)
)

// unique returns b followed by tag: the media service stores the same bytes
// once (an upload of them answers the existing media), so a test that needs
// several media needs several contents.
func unique(b []byte, tag string) []byte { return append(append([]byte(nil), b...), tag...) }

// Upload sends a file to POST /bo/medias and returns the media id.
func (st *Stack) Upload(name string, content []byte) string {
	st.t.Helper()
	return st.uploadJSON(name, content)["id"].(string)
}

// PostFile sends a file to POST /bo/medias as the multipart part "file".
func (st *Stack) PostFile(name string, content []byte) Response {
	st.t.Helper()
	body, ctype := fileBody(st.t, name, content)
	return st.BO("POST", "/bo/medias", body, "Content-Type", ctype)
}

// fileBody is a multipart/form-data body with content as the part
// "file", and its Content-Type.
func fileBody(t testing.TB, name string, content []byte) ([]byte, string) {
	t.Helper()
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreateFormFile("file", name)
	testkit.Must(t, err, "multipart")
	_, _ = part.Write(content)
	testkit.Must(t, w.Close(), "multipart close")
	return body.Bytes(), w.FormDataContentType()
}

type docJSON struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Type      string   `json:"type"`
	URL       *string  `json:"url"`
	TagsIDs   []string `json:"tagsIds"`
	Content   *string  `json:"content"`
	Sources   []string `json:"sources"`
	ImagesIDs []string `json:"imagesIds"`
	File      *struct {
		ID, Name string
	} `json:"file"`
	IsDeleted *bool   `json:"isDeleted"`
	CreatedAt *string `json:"createdAt"`
}

func TestDocumentsThroughTheGateway(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"vaccines","name":"Vaccins","categoryId":"health"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"kids","name":"Enfants","categoryId":"health"}`, 201)
	pdf := st.Upload("guide vaccins.pdf", pdfBytes)
	png := st.Upload("schéma.png", pngBytes)

	var pdfDoc, link, md, html docJSON
	r := st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":" Guide ","fileId":%q,"tagsIds":["vaccines","kids","vaccines"]}`, pdf), 201)
	r.JSON(t, &pdfDoc)
	if r.Header.Get("Location") != "/bo/documents/"+pdfDoc.ID+"/detail" || len(pdfDoc.ID) < 16 {
		t.Errorf("Location %q for id %q", r.Header.Get("Location"), pdfDoc.ID)
	}
	if pdfDoc.Title != "Guide" || pdfDoc.File == nil || pdfDoc.File.Name != "guide vaccins.pdf" || pdfDoc.URL != nil ||
		pdfDoc.Content != nil || strings.Join(pdfDoc.TagsIDs, ",") != "vaccines,kids" || pdfDoc.IsDeleted == nil || *pdfDoc.IsDeleted {
		t.Errorf("PDF document = %+v", pdfDoc)
	}
	st.Must("POST", "/bo/documents", `{"type":"LINK","title":"Site","url":"https://example.org/vaccins"}`, 201).JSON(t, &link)
	st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"MARKDOWN","title":"Fiche: enfants/ados","content":"# Fiche\nTexte","sources":["OMS"],"imagesIds":[%q]}`, png), 201).JSON(t, &md)
	st.Must("POST", "/bo/documents", `{"type":"HTML","title":"Page","content":"<p onclick=\"x()\">Hi<script>alert(1)</script></p>"}`, 201).JSON(t, &html)
	if html.Content == nil || strings.Contains(*html.Content, "script") || strings.Contains(*html.Content, "onclick") || html.ImagesIDs == nil || html.Sources == nil {
		t.Errorf("HTML document = %+v", html)
	}

	// Public listing: newest first, no content, no BO fields.
	var list []map[string]any
	pub := st.Req("GET", "/public/documents", nil)
	pub.JSON(t, &list)
	var order []string
	for _, d := range list {
		order = append(order, d["id"].(string))
		for _, k := range []string{"content", "isDeleted", "createdAt", "sources", "file"} {
			if _, ok := d[k]; ok {
				t.Errorf("public listing item carries %s: %v", k, d)
			}
		}
	}
	if strings.Join(order, ",") != strings.Join([]string{html.ID, md.ID, link.ID, pdfDoc.ID}, ",") {
		t.Errorf("listing order %v, want newest first", order)
	}
	if etag := pub.Header.Get("ETag"); etag == "" || st.Req("GET", "/public/documents", nil, "If-None-Match", etag).Status != 304 {
		t.Errorf("listing ETag %q does not revalidate", etag)
	}

	// Detail.
	var detail map[string]any
	st.Req("GET", "/public/documents/"+md.ID+"/detail", nil).JSON(t, &detail)
	if detail["content"] != "# Fiche\nTexte" || detail["imagesIds"] == nil || detail["isDeleted"] != nil || detail["createdAt"] != nil {
		t.Errorf("public detail = %v", detail)
	}
	detail = nil
	st.Req("GET", "/public/documents/"+link.ID+"/detail", nil).JSON(t, &detail)
	if detail["url"] != "https://example.org/vaccins" || detail["content"] != nil || detail["imagesIds"] != nil {
		t.Errorf("public LINK detail = %v", detail)
	}

	// Bad input, every failing field at once, nothing changed.
	bad := []struct {
		name, method, path, body string
		status                   int
		code, fields             string
	}{
		{"unknown tag and bad url", "POST", "/bo/documents", `{"type":"LINK","title":"","url":"javascript:alert(1)","tagsIds":["kids","nope"]}`, 422, "validation_failed", "title,url,tagsIds[1]"},
		{"file is not a pdf", "POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":"T","fileId":%q}`, png), 422, "validation_failed", "fileId"},
		{"image is not an image", "POST", "/bo/documents", fmt.Sprintf(`{"type":"HTML","title":"T","content":"x","imagesIds":[%q,"zz"]}`, pdf), 422, "validation_failed", "imagesIds[0],imagesIds[1]"},
		{"bad type", "POST", "/bo/documents", `{"type":"VIDEO","title":"T"}`, 422, "validation_failed", "type"},
		{"wrong JSON types", "POST", "/bo/documents", `{"type":"LINK","title":1,"tagsIds":"kids"}`, 400, "bad_request", "title,tagsIds"},
		{"patch without type", "PATCH", "/bo/documents/" + link.ID, `{"title":"T","url":"http://x.org"}`, 422, "validation_failed", "type"},
		{"patch with unknown type", "PATCH", "/bo/documents/" + link.ID, `{"type":"FOO","title":"T","url":"http://x.org"}`, 422, "validation_failed", "type"},
		{"html with nothing safe", "POST", "/bo/documents", `{"type":"HTML","title":"T","content":"<script>x()</script>"}`, 422, "validation_failed", "content"},
		{"type change", "PATCH", "/bo/documents/" + link.ID, `{"type":"MARKDOWN","title":"T","content":"x"}`, 422, "type_immutable", "type"},
		{"unknown document", "PATCH", "/bo/documents/nope", `{"type":"LINK","title":"T","url":"http://x.org"}`, 404, "not_found", ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := st.BO(tt.method, tt.path, tt.body)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d; %s", r.Status, tt.status, r.Body)
			}
			if p := r.Problem(t); p.Code != tt.code || (tt.fields != "" && p.Fields() != tt.fields) {
				t.Errorf("problem %+v, want %s %s", p, tt.code, tt.fields)
			}
		})
	}

	// PATCH takes the full variant body.
	var patched docJSON
	st.Must("PATCH", "/bo/documents/"+link.ID, `{"type":"LINK","title":"Site officiel","url":"https://example.org/v2","tagsIds":["kids"]}`, 200).JSON(t, &patched)
	if patched.Title != "Site officiel" || *patched.URL != "https://example.org/v2" || strings.Join(patched.TagsIDs, ",") != "kids" {
		t.Errorf("patched = %+v", patched)
	}

	// Downloads.
	dl := st.Req("GET", "/public/documents/"+pdfDoc.ID+"/download", nil)
	if dl.Status != 200 || !bytes.Equal(dl.Body, pdfBytes) || dl.Header.Get("Content-Type") != "application/pdf" ||
		!strings.HasPrefix(dl.Header.Get("Content-Disposition"), "inline") || dl.Header.Get("ETag") == "" ||
		dl.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("PDF download: %d %v (%d bytes)", dl.Status, dl.Header, len(dl.Body))
	}
	part := st.Req("GET", "/public/documents/"+pdfDoc.ID+"/download", nil, "Range", "bytes=0-7")
	if part.Status != 206 || string(part.Body) != "%PDF-1.4" || part.Header.Get("Content-Range") != fmt.Sprintf("bytes 0-7/%d", len(pdfBytes)) {
		t.Errorf("ranged PDF download: %d %q %v", part.Status, part.Body, part.Header)
	}
	if r := st.Req("GET", "/public/documents/"+pdfDoc.ID+"/download", nil, "If-None-Match", dl.Header.Get("ETag")); r.Status != 304 {
		t.Errorf("conditional PDF download: %d", r.Status)
	}
	dl = st.Req("GET", "/public/documents/"+md.ID+"/download", nil)
	if dl.Status != 200 || string(dl.Body) != "# Fiche\nTexte" || dl.Header.Get("Content-Type") != "text/markdown; charset=utf-8" ||
		dl.Header.Get("Content-Disposition") != `attachment; filename="Fiche_ enfants_ados.md"` {
		t.Errorf("markdown download: %d %q %v", dl.Status, dl.Body, dl.Header)
	}
	if r := st.Req("GET", "/public/documents/"+md.ID+"/download", nil, "Range", "bytes=100-"); r.Status != 416 || r.Problem(t).Code != "range_not_satisfiable" {
		t.Errorf("unsatisfiable range on markdown: %d %s", r.Status, r.Body)
	}
	if r := st.Req("GET", "/public/documents/"+md.ID+"/download", nil, "Range", "bytes=0-1,3-4"); r.Status != 200 || string(r.Body) != "# Fiche\nTexte" {
		t.Errorf("several ranges on markdown: %d %q, want the whole file", r.Status, r.Body)
	}
	dl = st.Req("GET", "/public/documents/"+html.ID+"/download", nil)
	if dl.Status != 200 || dl.Header.Get("Content-Type") != "text/html; charset=utf-8" || dl.Header.Get("Content-Security-Policy") != "sandbox" ||
		dl.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("html download: %d %v", dl.Status, dl.Header)
	}
	if r := st.Req("GET", "/public/documents/"+link.ID+"/download", nil); r.Status != 404 || r.Problem(t).Code != "no_file" {
		t.Errorf("LINK download: %d %s", r.Status, r.Body)
	}

	// Media in use cannot be deleted.
	if r := st.BO("DELETE", "/bo/medias/"+pdf, nil); r.Status != 409 || r.Problem(t).Code != "media_in_use" {
		t.Errorf("delete media in use: %d %s", r.Status, r.Body)
	}

	// Soft deletion life cycle.
	st.Must("DELETE", "/bo/documents/"+pdfDoc.ID, nil, 204)
	st.Must("DELETE", "/bo/documents/"+pdfDoc.ID, nil, 204)
	for _, p := range []string{"/detail", "/download"} {
		if r := st.Req("GET", "/public/documents/"+pdfDoc.ID+p, nil); r.Status != 404 {
			t.Errorf("public %s of a deleted document: %d", p, r.Status)
		}
	}
	st.Req("GET", "/public/documents", nil).JSON(t, &list)
	for _, d := range list {
		if d["id"] == pdfDoc.ID {
			t.Error("public listing shows a deleted document")
		}
	}
	var all []docJSON
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &all)
	if len(all) != 4 || all[3].ID != pdfDoc.ID || !*all[3].IsDeleted || all[3].CreatedAt == nil {
		t.Errorf("BO listing = %+v", all)
	}
	// Audit fields (CONTRACT.md §5): who, always; when and who deleted, on a deleted document only.
	var audit []map[string]any
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &audit)
	for _, d := range audit {
		_, by := d["createdBy"].(string)
		_, upBy := d["updatedBy"].(string)
		_, delAt := d["deletedAt"].(string)
		_, delBy := d["deletedBy"].(string)
		if deleted := d["id"] == pdfDoc.ID; !by || !upBy || delAt != deleted || delBy != deleted {
			t.Errorf("BO listing item %v: want createdBy and updatedBy, and deletedAt and deletedBy exactly when deleted", d)
		}
	}
	st.Must("GET", "/bo/documents/"+pdfDoc.ID+"/detail", nil, 200)
	if r := st.BO("GET", "/bo/documents/"+pdfDoc.ID+"/download", nil); r.Status != 200 || !bytes.Equal(r.Body, pdfBytes) {
		t.Errorf("BO download of a deleted document: %d", r.Status)
	}
	if r := st.BO("PATCH", "/bo/documents/"+pdfDoc.ID, fmt.Sprintf(`{"type":"PDF","title":"T","fileId":%q}`, pdf)); r.Status != 409 || r.Problem(t).Code != "document_deleted" {
		t.Errorf("PATCH of a deleted document: %d %s", r.Status, r.Body)
	}
	var restored docJSON
	st.Must("POST", "/bo/documents/"+pdfDoc.ID+"/restore", nil, 200).JSON(t, &restored)
	if *restored.IsDeleted || st.Req("GET", "/public/documents/"+pdfDoc.ID+"/detail", nil).Status != 200 {
		t.Errorf("restore: %+v", restored)
	}

	// Once no live document uses it, the media can go; the deleted document
	// that still named it drops the reference (an event), and deleting a tag
	// takes it out of every document.
	st.Must("DELETE", "/bo/documents/"+pdfDoc.ID, nil, 204)
	st.Must("DELETE", "/bo/medias/"+pdf, nil, 204)
	st.Must("DELETE", "/bo/tags/kids", nil, 204)
	Eventually(t, 5*time.Second, "the deleted media and tag leave the documents", func() bool {
		var d docJSON
		st.Must("GET", "/bo/documents/"+pdfDoc.ID+"/detail", nil, 200).JSON(t, &d)
		var l docJSON
		st.Must("GET", "/bo/documents/"+link.ID+"/detail", nil, 200).JSON(t, &l)
		return d.File == nil && strings.Join(d.TagsIDs, ",") == "vaccines" && len(l.TagsIDs) == 0
	})
	if r := st.BO("GET", "/bo/documents/"+pdfDoc.ID+"/download", nil); r.Status != 404 || r.Problem(t).Code != "no_file" {
		t.Errorf("download of a PDF whose media is gone: %d %s", r.Status, r.Body)
	}
}

// TestDependencyDown: with taxonomy down, a write that references tags is
// a clear 503 and changes nothing; reads of documents keep working.
func TestDependencyDown(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"C"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"t","name":"T","categoryId":"c"}`, 201)
	st.Stop("taxonomy")
	r := st.BO("POST", "/bo/documents", `{"type":"LINK","title":"T","url":"http://x.org","tagsIds":["t"]}`)
	if r.Status != 503 || !strings.Contains(r.Problem(t).Detail, "taxonomy") {
		t.Errorf("write with taxonomy down: %d %s", r.Status, r.Body)
	}
	if r := st.Req("GET", "/public/tags-categories", nil); r.Status != 502 && r.Status != 503 {
		t.Errorf("taxonomy route with taxonomy down: %d, want 502/503", r.Status)
	}
	var list []any
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &list)
	if len(list) != 0 {
		t.Errorf("a refused write left %v", list)
	}
	if r := st.Req("GET", "/public/documents", nil); r.Status != 200 {
		t.Errorf("document listing with taxonomy down: %d", r.Status)
	}
}
