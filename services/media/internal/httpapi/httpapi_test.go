package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
)

func TestUploadDownloadRoundTrip(t *testing.T) {
	a := newAPI(t, media.Config{})
	content := sample(pdfHead, 3<<20+17, 1) // several reads, not a whole number of KiB
	m := a.mustUpload("report.pdf", content)
	if m.Name != "report.pdf" || m.MimeType != "application/pdf" || m.Size != int64(len(content)) {
		t.Errorf("record %+v, want report.pdf, application/pdf, %d bytes", m, len(content))
	}
	if len(m.ID) < 16 || strings.ContainsAny(m.ID, "/+=?#%") {
		t.Errorf("id %q is not a URL-safe id of at least 96 bits", m.ID)
	}
	for _, k := range []string{m.CreatedAt, m.UpdatedAt} {
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", k); err != nil {
			t.Errorf("date %q is not RFC 3339 UTC with milliseconds", k)
		}
	}
	if m.CreatedBy != uploader || m.UpdatedBy != uploader {
		t.Errorf("createdBy %q, updatedBy %q; want the caller the gateway signed, %q", m.CreatedBy, m.UpdatedBy, uploader)
	}
	var listed []adminMedia
	a.must("GET", "/bo/medias", http.StatusOK).json(t, &listed)
	if len(listed) != 1 || listed[0].CreatedBy != uploader || listed[0].UpdatedBy != uploader {
		t.Errorf("GET /bo/medias = %+v, want the record with createdBy and updatedBy %q", listed, uploader)
	}
	unsigned := httptest.NewRequest("GET", "/bo/medias", nil)
	unsigned.Header.Set(proof.Header, "v1.0.editor.eA.x")
	a.serve(unsigned).problem(t, http.StatusUnauthorized, "unauthorized")

	for _, path := range []string{"/public/medias/", "/bo/medias/", "/internal/medias/"} {
		r := a.get(path + m.ID + "/download")
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: status %d; body %s", path, r.status, r.body)
		}
		if !bytes.Equal(r.body, content) || sum(r.body) != sum(content) {
			t.Errorf("%s: %d bytes downloaded (sha256 %s), want the %d uploaded (sha256 %s)",
				path, len(r.body), sum(r.body), len(content), sum(content))
		}
		want := map[string]string{
			"Content-Type":           "application/pdf",
			"Content-Length":         strconv.Itoa(len(content)),
			"ETag":                   `"` + sum(content) + `"`,
			"Content-Disposition":    `inline; filename="report.pdf"`,
			"X-Content-Type-Options": "nosniff",
			"Accept-Ranges":          "bytes",
		}
		for k, v := range want {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q", path, k, got, v)
			}
		}
		if lm, err := http.ParseTime(r.header.Get("Last-Modified")); err != nil || lm.Format(time.DateTime) != mustTime(t, m.CreatedAt).Format(time.DateTime) {
			t.Errorf("%s: Last-Modified %q, want createdAt %s", path, r.header.Get("Last-Modified"), m.CreatedAt)
		}
		wantCache := "public, max-age=31536000, immutable"
		if strings.HasPrefix(path, "/bo/") {
			wantCache = "private, max-age=31536000, immutable"
		}
		if got := r.header.Get("Cache-Control"); got != wantCache {
			t.Errorf("%s: Cache-Control %q, want %q", path, got, wantCache)
		}
	}

	head := a.serve(httptest.NewRequest(http.MethodHead, "/public/medias/"+m.ID+"/download", nil))
	if head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("Content-Length") != strconv.Itoa(len(content)) {
		t.Errorf("HEAD: status %d, %d body bytes, Content-Length %q", head.status, len(head.body), head.header.Get("Content-Length"))
	}

	var pub map[string]any
	a.must("GET", "/public/medias/"+m.ID, 200).json(t, &pub)
	if len(pub) != 5 || pub["id"] != m.ID || pub["name"] != "report.pdf" || pub["mimeType"] != "application/pdf" ||
		pub["size"] != float64(len(content)) || pub["sha256"] != sum(content) {
		t.Errorf("public record %v, want exactly id, name, mimeType, size, sha256 (no width or height on a PDF)", pub)
	}
	var adm adminMedia
	a.must("GET", "/bo/medias/"+m.ID, 200).json(t, &adm)
	if adm != m {
		t.Errorf("admin record %+v, want %+v", adm, m)
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	testkit.Must(t, err, "parse time")
	return tm
}

func TestListNewestFirstAndLookup(t *testing.T) {
	a := newAPI(t, media.Config{})
	var ids []string
	for i, head := range [][]byte{pdfHead, pngHead, jpegHead} {
		ids = append(ids, a.mustUpload(fmt.Sprintf("f%d", i), sample(head, 2000, uint64(i))).ID)
		time.Sleep(2 * time.Millisecond) // distinct createdAt
	}
	var list []adminMedia
	a.must("GET", "/bo/medias", 200).json(t, &list)
	if len(list) != 3 || list[0].ID != ids[2] || list[1].ID != ids[1] || list[2].ID != ids[0] {
		t.Errorf("list %+v, want newest first: %v reversed", list, ids)
	}

	var found []map[string]any
	a.must("GET", "/internal/medias?ids="+ids[0]+",unknown,"+ids[1]+"&ids="+ids[0], 200).json(t, &found)
	types := map[string]any{}
	for _, f := range found {
		types[f["id"].(string)] = f["mimeType"]
		want := 5 // id, name, mimeType, size, sha256
		if f["mimeType"] == "image/png" {
			want = 7 // and width, height
		}
		if len(f) != want {
			t.Errorf("lookup item %v, want id, name, mimeType, size, sha256 (and an image's width and height)", f)
		}
	}
	if len(found) != 2 || types[ids[0]] != "application/pdf" || types[ids[1]] != "image/png" {
		t.Errorf("lookup %v, want the pdf and the png only", found)
	}
	if r := a.must("GET", "/internal/medias", 200); string(r.body) != "[]" {
		t.Errorf("empty lookup %s, want []", r.body)
	}
	many := strings.Repeat("x,", 501)
	a.get("/internal/medias?ids="+many).problem(t, 400, "bad_request")

	a.get("/bo/medias/nope").problem(t, 404, "not_found")
	a.get("/public/medias/nope/download").problem(t, 404, "not_found")
	a.get("/public/medias/"+strings.Repeat("a", 200)).problem(t, 404, "not_found")
}

func TestTypeIsDecidedByTheBytes(t *testing.T) {
	a := newAPI(t, media.Config{})
	cases := []struct {
		name, claimed string
		head          []byte
		want          string
	}{
		{"x.pdf", "application/pdf", pngHead, "image/png"},
		{"a.png", "image/png", jpegHead, "image/jpeg"},
		{"b", "", gifHead, "image/gif"},
		{"c.jpg", "image/jpeg", webpHead, "image/webp"},
		{"d.bin", "application/octet-stream", pdfHead, "application/pdf"},
	}
	for _, c := range cases {
		r := a.upload(part{"file", c.name, c.claimed, sample(c.head, 2000, 7)})
		var m adminMedia
		r.json(t, &m)
		if r.status != 201 || m.MimeType != c.want {
			t.Errorf("%s claimed %s: status %d type %q, want 201 %s", c.name, c.claimed, r.status, m.MimeType, c.want)
		}
	}
	n, _ := a.store.Collection().CountDocuments(context.Background(), bson.M{})
	if n != int64(len(cases)) {
		t.Fatalf("%d records, want %d", n, len(cases))
	}
}

func TestRefusedTypeLeavesNothing(t *testing.T) {
	a := newAPI(t, media.Config{})
	for _, c := range []struct {
		name    string
		content []byte
	}{
		{"text claimed as pdf", []byte("just some text, not a PDF at all\n")},
		{"html", []byte("<!DOCTYPE html><html><script>alert(1)</script></html>")},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)},
		{"empty", nil},
		{"zip", append([]byte("PK\x03\x04"), make([]byte, 100)...)},
	} {
		r := a.upload(part{"file", "doc.pdf", "application/pdf", c.content})
		p := r.problem(t, 415, "unsupported_media_type")
		if !strings.Contains(p.Detail, "application/pdf") {
			t.Errorf("%s: detail %q should list the allowed types", c.name, p.Detail)
		}
	}
	a.assertEmpty()

	// The allow-list is configurable.
	b := newAPIOn(t, media.Config{AllowedTypes: []string{"image/png"}}, testkit.MinIO(t))
	b.upload(part{"file", "doc.pdf", "application/pdf", sample(pdfHead, 100, 1)}).problem(t, 415, "unsupported_media_type")
	b.mustUpload("p.png", sample(pngHead, 100, 1))
}

func TestOversizeUploadLeavesNothing(t *testing.T) {
	const limit = 6 << 20
	a := newAPI(t, media.Config{MaxSize: limit})
	for _, n := range []int{limit + 1, limit + 100_000, 2 * limit} {
		r := a.upload(part{"file", "big.pdf", "application/pdf", sample(pdfHead, n, 3)})
		p := r.problem(t, 413, "payload_too_large")
		if !strings.Contains(p.Detail, strconv.Itoa(limit)) {
			t.Errorf("detail %q should name the limit", p.Detail)
		}
	}
	// A body far over the limit in other parts is refused by the request cap.
	r := a.upload(part{"note", "", "", make([]byte, limit+2<<20)}, part{"file", "x.pdf", "", sample(pdfHead, 10, 1)})
	r.problem(t, 413, "payload_too_large")
	a.assertEmpty()

	m := a.mustUpload("exact.pdf", sample(pdfHead, limit, 4))
	if m.Size != limit {
		t.Errorf("size %d, want %d", m.Size, limit)
	}
}

func TestNames(t *testing.T) {
	a := newAPI(t, media.Config{})
	long := strings.Repeat("é", 300) + ".pdf" // 304 characters
	cases := []struct {
		raw, name, disposition string
	}{
		{"../../etc/passwd", "passwd", `inline; filename="passwd"`},
		{`C:\dir\x.pdf`, "x.pdf", `inline; filename="x.pdf"`},
		{"résumé.pdf", "résumé.pdf", `inline; filename="resume.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`},
		{"re\u0301sume\u0301.pdf", "résumé.pdf", `inline; filename="resume.pdf"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`},
		{"a\tb\x01c\u202Efdp.exe", "abcfdp.exe", `inline; filename="abcfdp.exe"`},
		{`say "hi" 100%.pdf`, `say "hi" 100%.pdf`, `inline; filename="say _hi_ 100_.pdf"; filename*=UTF-8''say%20%22hi%22%20100%25.pdf`},
		{"dir/", "file", `inline; filename="file"`},
		{"..", "file", `inline; filename="file"`},
		{"", "file", `inline; filename="file"`},
		{"報告.pdf", "報告.pdf", `inline; filename="__.pdf"; filename*=UTF-8''%E5%A0%B1%E5%91%8A.pdf`},
	}
	for i, c := range cases {
		r := a.upload(part{"file", c.raw, "application/pdf", sample(pdfHead, 64, uint64(100+i))})
		var m adminMedia
		r.json(t, &m)
		if r.status != 201 || m.Name != c.name {
			t.Errorf("filename %q: status %d name %q, want 201 %q", c.raw, r.status, m.Name, c.name)
			continue
		}
		if got := a.get("/public/medias/" + m.ID + "/download").header.Get("Content-Disposition"); got != c.disposition {
			t.Errorf("filename %q: Content-Disposition %s, want %s", c.raw, got, c.disposition)
		}
	}
	m := a.mustUpload(long, sample(pdfHead, 64, 1))
	if m.Name != strings.Repeat("é", 251)+".pdf" {
		t.Errorf("long name cut to %d characters %q, want 255 keeping the extension", utf8.RuneCountInString(m.Name), m.Name)
	}
	// Not an image or a PDF: attachment.
	b := newAPIOn(t, media.Config{AllowedTypes: []string{"text/plain"}}, testkit.MinIO(t))
	m = b.mustUpload("notes.txt", []byte("hello"))
	if got := b.get("/bo/medias/" + m.ID + "/download").header.Get("Content-Disposition"); got != `attachment; filename="notes.txt"` {
		t.Errorf("text file: Content-Disposition %s, want attachment", got)
	}
}

func TestRanges(t *testing.T) {
	a := newAPI(t, media.Config{})
	content := sample(pngHead, 100_000, 9)
	m := a.mustUpload("p.png", content)
	path := "/public/medias/" + m.ID + "/download"
	size := len(content)
	for _, c := range []struct {
		rng        string
		start, end int // inclusive
	}{
		{"bytes=0-0", 0, 0},
		{"bytes=10-19", 10, 19},
		{"bytes=99990-", 99990, size - 1},
		{"bytes=-5", size - 5, size - 1},
		{"bytes=50000-999999999", 50000, size - 1},
	} {
		r := a.get(path, "Range", c.rng)
		wantCR := fmt.Sprintf("bytes %d-%d/%d", c.start, c.end, size)
		if r.status != 206 || r.header.Get("Content-Range") != wantCR || !bytes.Equal(r.body, content[c.start:c.end+1]) ||
			r.header.Get("Content-Length") != strconv.Itoa(c.end-c.start+1) {
			t.Errorf("Range %s: status %d Content-Range %q, %d bytes; want 206 %s", c.rng, r.status, r.header.Get("Content-Range"), len(r.body), wantCR)
		}
	}
	for _, rng := range []string{"bytes=100000-", "bytes=200000-300000"} {
		r := a.get(path, "Range", rng)
		r.problem(t, 416, "range_not_satisfiable")
		if cr := r.header.Get("Content-Range"); cr != fmt.Sprintf("bytes */%d", size) {
			t.Errorf("Range %s: Content-Range %q, want bytes */%d", rng, cr, size)
		}
	}
	// Several ranges: the whole file.
	r := a.get(path, "Range", "bytes=0-1,5-6")
	if r.status != 200 || !bytes.Equal(r.body, content) {
		t.Errorf("multi-range: status %d, %d bytes; want 200 and the whole file", r.status, len(r.body))
	}
	// If-Range with the current ETag honours the range, with another it does not.
	etag := `"` + sum(content) + `"`
	if r := a.get(path, "Range", "bytes=0-9", "If-Range", etag); r.status != 206 {
		t.Errorf("If-Range matching: status %d, want 206", r.status)
	}
	if r := a.get(path, "Range", "bytes=0-9", "If-Range", `"other"`); r.status != 200 || len(r.body) != size {
		t.Errorf("If-Range not matching: status %d, want 200 with the whole file", r.status)
	}
}

func TestConditionalRequests(t *testing.T) {
	a := newAPI(t, media.Config{})
	content := sample(gifHead, 5000, 2)
	m := a.mustUpload("g.gif", content)
	path := "/bo/medias/" + m.ID + "/download"
	etag := a.get(path).header.Get("ETag")
	if etag != `"`+sum(content)+`"` {
		t.Fatalf("ETag %s, want the quoted sha256", etag)
	}
	if again := a.get(path).header.Get("ETag"); again != etag {
		t.Errorf("ETag changed from %s to %s", etag, again)
	}
	for _, inm := range []string{etag, `W/` + etag, `"x", ` + etag, "*"} {
		r := a.get(path, "If-None-Match", inm)
		if r.status != 304 || len(r.body) != 0 || r.header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: status %d, %d bytes, ETag %q; want 304 without body", inm, r.status, len(r.body), r.header.Get("ETag"))
		}
	}
	if r := a.get(path, "If-None-Match", `"other"`); r.status != 200 || !bytes.Equal(r.body, content) {
		t.Errorf("If-None-Match other: status %d, want 200 with the file", r.status)
	}
}

func TestMalformedUploads(t *testing.T) {
	a := newAPI(t, media.Config{})
	// No part named file.
	a.upload(part{"document", "x.pdf", "application/pdf", sample(pdfHead, 100, 1)}).problem(t, 400, "bad_request")
	// Other parts are ignored, the first file part is taken.
	r := a.upload(part{"title", "", "", []byte("hello")}, part{"file", "a.pdf", "", sample(pdfHead, 100, 1)},
		part{"file", "b.png", "", sample(pngHead, 100, 1)})
	var m adminMedia
	r.json(t, &m)
	if r.status != 201 || m.Name != "a.pdf" {
		t.Errorf("status %d record %+v, want the first file part", r.status, m)
	}

	req := httptest.NewRequest("POST", "/bo/medias", strings.NewReader(`{"file":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	a.serve(req).problem(t, 415, "unsupported_media_type")
	req = httptest.NewRequest("POST", "/bo/medias", strings.NewReader("x"))
	req.Header.Set("Content-Type", "multipart/form-data")
	a.serve(req).problem(t, 400, "bad_request")
	req = httptest.NewRequest("POST", "/bo/medias", strings.NewReader("this is not multipart"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=xyz")
	a.serve(req).problem(t, 400, "bad_request")

	n, _ := a.store.Collection().CountDocuments(context.Background(), bson.M{})
	if n != 1 {
		t.Errorf("%d records, want the one good upload", n)
	}
}

// TestCutOffUploadLeavesNothing sends a body that stops in the middle of the
// file, as when the client goes away: small (inside the first part) and
// large (after a whole part reached the storage).
func TestCutOffUploadLeavesNothing(t *testing.T) {
	a := newAPI(t, media.Config{})
	for _, n := range []int{1000, 17 << 20} {
		ct, body := multipartBody(t, part{"file", "x.pdf", "application/pdf", sample(pdfHead, n+4096, 5)})
		cut := body[:len(body)-4096-100] // the closing boundary never comes
		pr, pw := io.Pipe()
		go func() {
			_, _ = pw.Write(cut)
			_ = pw.Close() // the connection ends
		}()
		req := httptest.NewRequest("POST", "/bo/medias", pr)
		req.Header.Set("Content-Type", ct)
		a.serve(req).problem(t, 400, "bad_request")
	}
	// The same with the client's connection failing with an error.
	ct, body := multipartBody(t, part{"file", "x.pdf", "application/pdf", sample(pdfHead, 20<<20, 5)})
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body[:18<<20])
		_ = pw.CloseWithError(fmt.Errorf("connection reset by peer"))
	}()
	req := httptest.NewRequest("POST", "/bo/medias", pr)
	req.Header.Set("Content-Type", ct)
	a.serve(req).problem(t, 400, "bad_request")
	a.assertEmpty()
}

// TestCutOffThroughRealServer closes a real TCP connection mid-upload.
func TestCutOffThroughRealServer(t *testing.T) {
	a := newAPI(t, media.Config{})
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	ct, body := multipartBody(t, part{"file", "x.pdf", "application/pdf", sample(pdfHead, 20<<20, 6)})
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write(body[:len(body)/2])
		cancel() // the client gives up
		// and its body ends: after a cancel, Do waits for the body writer,
		// which would otherwise wait on this pipe forever.
		_ = pw.CloseWithError(context.Canceled)
	}()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/bo/medias", pr)
	signAsGateway(req)
	req.Header.Set("Content-Type", ct)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the cancelled upload got status %d", resp.StatusCode)
	}
	_ = pw.Close()
	srv.Close() // waits for the handler, which sees the connection end
	a.assertEmpty()
}

// Records are served from renderings in memory: conditional, with their
// Cache-Control, HEAD alike; writes through another replica show at once
// on the back-office, and a public record uploaded elsewhere is found at
// once too (an unknown id makes the replica check the revision).
func TestRecordsFromMemory(t *testing.T) {
	a := newAPI(t, media.Config{})
	other := a.replica()
	m := other.mustUpload("guide.pdf", sample(pdfHead, 100, 1))

	pub := a.must("GET", "/public/medias/"+m.ID, 200)
	etag := pub.header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || pub.header.Get("Cache-Control") != "no-cache" || pub.header.Get("Vary") != "Accept-Encoding" {
		t.Errorf("public record: headers %v, want a strong ETag, no-cache, Vary", pub.header)
	}
	if r := a.get("/public/medias/"+m.ID, "If-None-Match", etag, "Cache-Control", "no-cache"); r.status != 304 || len(r.body) != 0 {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", r.status)
	}
	head := a.must("HEAD", "/public/medias/"+m.ID, 200)
	if len(head.body) != 0 || head.header.Get("ETag") != etag || head.header.Get("Content-Length") != strconv.Itoa(len(pub.body)) {
		t.Errorf("HEAD: %v, %d body bytes; want GET's headers and no body", head.header, len(head.body))
	}
	bo := a.must("GET", "/bo/medias/"+m.ID, 200)
	if bo.header.Get("Cache-Control") != "private, no-cache" || bo.header.Get("ETag") == etag {
		t.Errorf("BO record: headers %v, want private, no-cache and its own ETag", bo.header)
	}

	for i := 0; i < 8; i++ {
		other.mustUpload(fmt.Sprintf("image-%d-with-a-rather-long-name.png", i), sample(pngHead, 100, uint64(10+i)))
	}
	list := a.get("/bo/medias", "Accept-Encoding", "gzip")
	var all []adminMedia
	r := response{status: list.status, body: gunzip(t, list.body)}
	r.json(t, &all)
	if list.status != 200 || len(all) != 9 || list.header.Get("Content-Encoding") != "gzip" ||
		list.header.Get("Cache-Control") != "private, no-cache" || !strings.HasSuffix(list.header.Get("ETag"), `-gzip"`) {
		t.Errorf("BO listing after uploads through another replica: %d, %d media, headers %v; want the 9 at once, gzip", list.status, len(all), list.header)
	}

	other.must("DELETE", "/bo/medias/"+m.ID, 204)
	a.must("GET", "/bo/medias/"+m.ID, 404)
	if r := a.get("/bo/medias", "If-None-Match", list.header.Get("ETag")); r.status != 200 {
		t.Errorf("BO listing after a deletion through another replica: %d, want 200 with a new ETag", r.status)
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	testkit.Must(t, err, "gzip reader")
	out, err := io.ReadAll(zr)
	testkit.Must(t, err, "gunzip")
	return out
}
