package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// pdfOfPages returns a PDF of n US-letter pages, page i saying word i
// (wordOnPage).
func pdfOfPages(n int) []byte {
	objs := []string{"<< /Type /Catalog /Pages 2 0 R >>", "", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"}
	kids := make([]string, n)
	for i := range n {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
		content := fmt.Sprintf("BT /F1 24 Tf 72 700 Td (%s) Tj ET", wordOnPage(i+1))
		objs = append(objs, fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content))
	}
	objs[1] = fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n)
	return pdfWith(objs, "")
}

func wordOnPage(i int) string { return fmt.Sprintf("okapi%dword", i) }

// pdfWith lays out objs with a correct cross-reference table.
func pdfWith(objs []string, trailer string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, trailer, xref)
	return b.Bytes()
}

// encryptedPDF is a PDF encrypted with a user password no one knows.
func encryptedPDF() []byte {
	return pdfWith([]string{"<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
		"<< /Filter /Standard /V 1 /R 2 /O <" + strings.Repeat("11", 32) + "> /U <" + strings.Repeat("22", 32) + "> /P -4 >>"},
		"/Encrypt 4 0 R /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]")
}

// TestMediaPDFCoversAndText, through the gateway as an app sees it: an
// uploaded PDF has its page count, a cover through the presets (an image,
// with an ETag and 304) and its words as compressed text; an encrypted one
// is stored, its cover and text are clear 422s, and the service lives on.
func TestMediaPDFCoversAndText(t *testing.T) {
	st := NewStack(t, nil)
	var m struct {
		ID         string            `json:"id"`
		PageCount  int               `json:"pageCount"`
		PageWidth  float64           `json:"pageWidth"`
		Text       string            `json:"text"`
		Renditions map[string]string `json:"renditions"`
	}
	st.Must("GET", "/bo/medias", nil, 200)
	up := st.PostFile("report.pdf", pdfOfPages(120))
	up.JSON(t, &m)
	if up.Status != http.StatusCreated || m.PageCount != 120 || m.PageWidth != 612 || m.Text == "" || m.Renditions["thumb"] == "" {
		t.Fatalf("upload of a 120-page PDF: %d %s; want pageCount, pageWidth, text and renditions", up.Status, up.Body)
	}
	thumb := st.Req("GET", m.Renditions["thumb"], nil, "Accept", "image/webp")
	if thumb.Status != 200 || thumb.Header.Get("Content-Type") != "image/webp" || thumb.Header.Get("ETag") == "" ||
		!bytes.HasPrefix(thumb.Body, []byte("RIFF")) {
		t.Fatalf("preset thumb of the PDF: %d %v", thumb.Status, thumb.Header)
	}
	if r := st.Req("GET", m.Renditions["thumb"], nil, "Accept", "image/webp", "If-None-Match", thumb.Header.Get("ETag")); r.Status != http.StatusNotModified {
		t.Errorf("the thumb with its ETag: %d, want 304", r.Status)
	}
	text := st.Req("GET", m.Text, nil, "Accept-Encoding", "gzip")
	if text.Status != 200 || text.Header.Get("Content-Encoding") != "gzip" || text.Header.Get("ETag") == "" {
		t.Fatalf("the PDF's text: %d %v, want 200 gzip with an ETag", text.Status, text.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(text.Body))
	if err != nil {
		t.Fatal(err)
	}
	words, _ := io.ReadAll(zr)
	for _, i := range []int{1, 60, 120} {
		if !bytes.Contains(words, []byte(wordOnPage(i))) {
			t.Errorf("the text lacks the word of page %d", i)
		}
	}
	if r := st.Req("GET", m.Text, nil, "Accept-Encoding", "gzip", "If-None-Match", text.Header.Get("ETag")); r.Status != http.StatusNotModified {
		t.Errorf("the text with its ETag: %d, want 304", r.Status)
	}

	enc := st.PostFile("locked.pdf", encryptedPDF())
	var locked struct {
		ID        string `json:"id"`
		PageCount int    `json:"pageCount"`
	}
	enc.JSON(t, &locked)
	if enc.Status != http.StatusCreated || locked.PageCount != 0 {
		t.Fatalf("upload of an encrypted PDF: %d %s, want 201 without a page count", enc.Status, enc.Body)
	}
	cover := st.Req("GET", "/public/medias/"+locked.ID+"/download?preset=thumb", nil)
	if p := cover.Problem(t); cover.Status != 422 || p.Code != "image_not_renderable" || !strings.Contains(p.Detail, "encrypted") {
		t.Errorf("cover of an encrypted PDF: %d %+v", cover.Status, p)
	}
	tx := st.Req("GET", "/public/medias/"+locked.ID+"/text", nil)
	if p := tx.Problem(t); tx.Status != 422 || p.Code != "text_not_readable" {
		t.Errorf("text of an encrypted PDF: %d %+v", tx.Status, p)
	}
	st.Must("GET", "/public/medias/"+m.ID, nil, 200)
}
