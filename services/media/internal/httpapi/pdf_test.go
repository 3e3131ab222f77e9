package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/pdf"
	"github.com/doclib/services/media/internal/pdf/pdftest"
	"github.com/doclib/services/media/internal/rendition"
)

// countingPDF is the real PDF reader, its text extractions counted.
type countingPDF struct {
	*pdf.Reader
	texts atomic.Int32
	pages atomic.Int32 // PageSize and Cover runs
	// gate, when set, holds every text extraction until it is closed;
	// entered is told of each one held.
	gate    chan struct{}
	entered chan struct{}
}

func (c *countingPDF) Text(ctx context.Context, path string) ([]byte, error) {
	c.texts.Add(1)
	if c.gate != nil {
		c.entered <- struct{}{}
		<-c.gate
	}
	return c.Reader.Text(ctx, path)
}

func (c *countingPDF) PageSize(ctx context.Context, path string) (float64, float64, error) {
	c.pages.Add(1)
	return c.Reader.PageSize(ctx, path)
}

func (c *countingPDF) Cover(ctx context.Context, path string, w, h int) ([]byte, error) {
	c.pages.Add(1)
	return c.Reader.Cover(ctx, path, w, h)
}

// newPDFAPI is newRenditionAPI reading PDFs with poppler-utils.
func newPDFAPI(t *testing.T) (*api, *countingPDF) {
	t.Helper()
	return newPDFAPIWith(t, rendition.Config{})
}

func newPDFAPIWith(t *testing.T, cfg rendition.Config) (*api, *countingPDF) {
	t.Helper()
	if err := pdf.Available(); err != nil {
		t.Skip(err)
	}
	a := newAPI(t, media.Config{})
	r := &countingPDF{Reader: pdf.NewReader(pdf.Config{Timeout: 20 * time.Second, CPU: 10 * time.Second})}
	a.svc.WithPDF(r)
	a, _ = a.withRenditions(cfg)
	a.renditions.WithPDF(r)
	return a, r
}

type pdfRecord struct {
	adminMedia
	PageCount  int               `json:"pageCount"`
	PageWidth  float64           `json:"pageWidth"`
	PageHeight float64           `json:"pageHeight"`
	Text       string            `json:"text"`
	Renditions map[string]string `json:"renditions"`
}

// TestPDFCovers: an uploaded PDF's record has its page count and first
// page's size, preset links and its text's address; the rendition
// parameters render its first page as for an image (sizes, fits, formats,
// a stored rendition with its ETag and 304).
func TestPDFCovers(t *testing.T) {
	a, _ := newPDFAPI(t)
	r := a.upload(part{"file", "report.pdf", "application/pdf", pdftest.Pages(3)})
	var rec pdfRecord
	r.json(t, &rec)
	if r.status != http.StatusCreated || rec.PageCount != 3 || rec.PageWidth != 612 || rec.PageHeight != 792 ||
		rec.Renditions["thumb"] != "/public/medias/"+rec.ID+"/download?preset=thumb" || rec.Text != "/public/medias/"+rec.ID+"/text" {
		t.Fatalf("upload of a 3-page PDF: %d %+v; want its pages, size, preset links and text link", r.status, rec)
	}
	var pub pdfRecord
	a.get("/public/medias/"+rec.ID).json(t, &pub)
	if pub.PageCount != 3 || pub.PageWidth != 612 {
		t.Errorf("public record %+v, want the page count and size", pub)
	}

	thumb := a.get("/public/medias/"+rec.ID+"/download?preset=thumb", "Accept", "image/webp,*/*")
	if w, h := decoded(t, thumb, "image/webp"); w != 160 || h != 160 {
		t.Errorf("preset thumb of a PDF: %d×%d, want 160×160", w, h)
	}
	if thumb.header.Get("Vary") != "Accept" || !strings.HasPrefix(thumb.header.Get("Cache-Control"), "public") {
		t.Errorf("thumb headers %v, want Vary: Accept and public caching", thumb.header)
	}
	if w, h := decoded(t, a.get("/public/medias/"+rec.ID+"/download?w=320&format=png"), "image/png"); w != 320 || h != 414 {
		t.Errorf("w=320 of a 612×792 page: %d×%d, want 320×414", w, h)
	}
	if w, h := decoded(t, a.get("/public/medias/"+rec.ID+"/download?preset=card"), "image/jpeg"); w != 640 || h != 828 {
		t.Errorf("preset card without Accept: %d×%d, want a 640×828 JPEG", w, h)
	}
	again := a.get("/public/medias/"+rec.ID+"/download?preset=thumb", "Accept", "image/webp")
	if again.status != 200 || again.header.Get("ETag") != thumb.header.Get("ETag") {
		t.Errorf("the thumb again: %d ETag %q, want the stored one %q", again.status, again.header.Get("ETag"), thumb.header.Get("ETag"))
	}
	if r := a.get("/public/medias/"+rec.ID+"/download?preset=thumb", "Accept", "image/webp", "If-None-Match", thumb.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match with the thumb's ETag: %d, want 304", r.status)
	}
	a.get("/public/medias/"+rec.ID+"/download?w=0&format=bmp").problem(t, http.StatusUnprocessableEntity, "validation_failed")
	if r := a.get("/public/medias/" + rec.ID + "/download"); r.status != 200 || r.header.Get("Content-Type") != "application/pdf" {
		t.Errorf("the original: %d %s, want the PDF", r.status, r.header.Get("Content-Type"))
	}
}

// TestPDFText: the text of a PDF is extracted once, stored, and served
// compressed with a strong ETag; a media that is not a PDF has none.
func TestPDFText(t *testing.T) {
	a, reader := newPDFAPI(t)
	m := a.mustUpload("report.pdf", pdftest.Pages(100))
	r := a.get("/public/medias/"+m.ID+"/text", "Accept-Encoding", "gzip")
	body := gunzip(t, r.body)
	if r.status != 200 || r.header.Get("Content-Encoding") != "gzip" || r.header.Get("Content-Type") != "text/plain; charset=utf-8" ||
		r.header.Get("ETag") == "" || !strings.Contains(r.header.Get("Vary"), "Accept-Encoding") {
		t.Fatalf("text: %d %v, want 200 gzip text/plain with an ETag", r.status, r.header)
	}
	for _, n := range []int{1, 50, 100} {
		if !strings.Contains(string(body), pdftest.Word(n)) {
			t.Errorf("the text lacks page %d's word %s", n, pdftest.Word(n))
		}
	}
	if !a.hasKey(media.RenditionPrefix(m.SHA256) + "text") {
		t.Error("the text is not stored beside the renditions")
	}
	plain := a.get("/public/medias/"+m.ID+"/text", "Accept-Encoding", "identity")
	if plain.status != 200 || string(plain.body) != string(body) || plain.header.Get("Content-Encoding") != "" {
		t.Errorf("text without compression: %d %v", plain.status, plain.header)
	}
	if r2 := a.get("/public/medias/"+m.ID+"/text", "Accept-Encoding", "gzip", "If-None-Match", r.header.Get("ETag")); r2.status != http.StatusNotModified {
		t.Errorf("If-None-Match with the text's ETag: %d, want 304", r2.status)
	}
	if n := reader.texts.Load(); n != 1 {
		t.Errorf("the text was extracted %d times, want once", n)
	}
	img := a.mustUpload("p.png", pngWithIHDR(3, 2))
	a.get("/public/medias/"+img.ID+"/text").problem(t, http.StatusNotFound, "not_found")
	a.must("DELETE", "/bo/medias/"+m.ID, http.StatusNoContent)
	if a.hasKey(media.RenditionPrefix(m.SHA256)) {
		t.Error("the text outlived its media")
	}
}

// TestPDFTextServedFromMemory: a text is read from the store and
// compressed once per encoding, then served from memory: the GETs after
// the first do no decompression and no compression.
func TestPDFTextServedFromMemory(t *testing.T) {
	a, _ := newPDFAPI(t)
	m := a.mustUpload("report.pdf", pdftest.Pages(100))
	first := a.get("/public/medias/"+m.ID+"/text", "Accept-Encoding", "gzip")
	for _, enc := range []string{"gzip", "gzip", "zstd", "identity", "br"} {
		r := a.get("/public/medias/"+m.ID+"/text", "Accept-Encoding", enc)
		if r.status != 200 {
			t.Fatalf("text in %s: %d", enc, r.status)
		}
		if enc == "gzip" && string(r.body) != string(first.body) {
			t.Errorf("the gzip text changed between GETs")
		}
	}
	if n := a.renditions.TextLoads(); n != 1 {
		t.Errorf("the text was read and rendered %d times for 6 GETs, want once", n)
	}
}

// TestPDFTextBusy: texts are read and compressed a few at a time; a GET
// that finds every text slot taken for Config.Wait is answered 503 with
// Retry-After, even for a text already stored.
func TestPDFTextBusy(t *testing.T) {
	a, reader := newPDFAPIWith(t, rendition.Config{Concurrency: 1, Wait: 200 * time.Millisecond, TextCacheBytes: 1})
	stored := a.mustUpload("stored.pdf", pdftest.Pages(3))
	if r := a.get("/public/medias/" + stored.ID + "/text"); r.status != 200 {
		t.Fatalf("first text: %d %s", r.status, r.body)
	}
	slow := a.mustUpload("slow.pdf", pdftest.Pages(4))
	reader.gate, reader.entered = make(chan struct{}), make(chan struct{}, 1)
	done := make(chan response, 1)
	go func() { done <- a.get("/public/medias/" + slow.ID + "/text") }()
	<-reader.entered
	busy := a.get("/public/medias/" + stored.ID + "/text")
	close(reader.gate)
	busy.problem(t, http.StatusServiceUnavailable, "unavailable")
	if busy.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %v", busy.header)
	}
	if r := <-done; r.status != 200 {
		t.Errorf("the slow text: %d, want 200", r.status)
	}
}

// TestPDFFailuresRemembered: a PDF whose text or cover cannot be read is
// answered 422 from memory afterwards, without running the tools again.
func TestPDFFailuresRemembered(t *testing.T) {
	a, reader := newPDFAPI(t)
	m := a.mustUpload("locked.pdf", pdftest.Encrypted())
	for range 3 {
		a.get("/public/medias/"+m.ID+"/text").problem(t, http.StatusUnprocessableEntity, "text_not_readable")
	}
	if n := reader.texts.Load(); n != 1 {
		t.Errorf("the unreadable text was extracted %d times for 3 GETs, want once", n)
	}
	a.get("/public/medias/"+m.ID+"/download?preset=thumb").problem(t, http.StatusUnprocessableEntity, "image_not_renderable")
	runs := reader.pages.Load()
	for range 2 {
		a.get("/public/medias/"+m.ID+"/download?preset=thumb").problem(t, http.StatusUnprocessableEntity, "image_not_renderable")
	}
	if n := reader.pages.Load(); n != runs {
		t.Errorf("the unreadable cover ran the PDF tools %d more times, want none", n-runs)
	}
}

// TestHostilePDFUploads: PDFs that cannot be read are stored (they are the
// editor's files) without a page count; their covers and text are clear
// 422s, and the service answers on.
func TestHostilePDFUploads(t *testing.T) {
	a, _ := newPDFAPI(t)
	for name, content := range map[string][]byte{
		"encrypted":  pdftest.Encrypted(),
		"junk":       append([]byte("%PDF-1.4\n"), sample(nil, 5000, 9)...),
		"cut":        pdftest.Pages(2)[:300],
		"deep":       pdftest.DeepNesting(50_000),
		"many pages": pdftest.HugePageCount(100_000),
	} {
		r := a.upload(part{"file", name + ".pdf", "application/pdf", content})
		var rec pdfRecord
		r.json(t, &rec)
		if r.status != http.StatusCreated {
			t.Fatalf("%s: upload %d %s", name, r.status, r.body)
		}
		t.Logf("%s: %d pages", name, rec.PageCount)
		if rec.PageCount != 0 && name != "many pages" && name != "deep" {
			t.Errorf("%s: %d pages, want none", name, rec.PageCount)
		}
		if c := a.get("/public/medias/" + rec.ID + "/download?preset=thumb"); c.status != http.StatusOK {
			c.problem(t, http.StatusUnprocessableEntity, "image_not_renderable")
		}
		if tx := a.get("/public/medias/" + rec.ID + "/text"); tx.status != http.StatusOK {
			tx.problem(t, http.StatusUnprocessableEntity, "text_not_readable")
		}
	}
	enc := a.upload(part{"file", "again.pdf", "application/pdf", pdftest.Encrypted()})
	var rec pdfRecord
	enc.json(t, &rec)
	p := a.get("/public/medias/"+rec.ID+"/text").problem(t, http.StatusUnprocessableEntity, "text_not_readable")
	if !strings.Contains(p.Detail, "encrypted") {
		t.Errorf("an encrypted PDF's text: %q, want it to say encrypted", p.Detail)
	}
}

// slowInspector is the real PDF reader, its inspections held a while and
// the most run at once counted.
type slowInspector struct {
	*pdf.Reader
	now, most atomic.Int32
}

func (s *slowInspector) Inspect(ctx context.Context, path string) (int, float64, float64, error) {
	n := s.now.Add(1)
	defer s.now.Add(-1)
	for m := s.most.Load(); n > m && !s.most.CompareAndSwap(m, n); m = s.most.Load() {
	}
	time.Sleep(300 * time.Millisecond)
	return s.Reader.Inspect(ctx, path)
}

// TestPDFUploadInspectionsBounded: uploads of PDFs arriving together are
// read a few at a time, and all get their pages.
func TestPDFUploadInspectionsBounded(t *testing.T) {
	a, _ := newPDFAPI(t)
	in := &slowInspector{Reader: pdf.NewReader(pdf.Config{Timeout: 20 * time.Second, CPU: 10 * time.Second})}
	a.svc.WithPDF(in)
	const n = 6
	results := make(chan response, n)
	for i := range n {
		go func() { results <- a.upload(part{"file", "p.pdf", "application/pdf", pdftest.Pages(i + 1)}) }()
	}
	for range n {
		r := <-results
		var rec pdfRecord
		r.json(t, &rec)
		if r.status != http.StatusCreated || rec.PageCount == 0 {
			t.Errorf("upload: %d %s, want 201 with its pages", r.status, r.body)
		}
	}
	if m := in.most.Load(); m > media.InspectConcurrency {
		t.Errorf("%d PDFs were read at once, want at most %d", m, media.InspectConcurrency)
	}
}
