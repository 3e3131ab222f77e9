package rendering

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// bigJSON is a JSON body well over MinCompressSize.
func bigJSON() []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; i < 200; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"id":"doc-%d","title":"Guide de vaccination n°%d","type":"LINK","tagsIds":[]}`, i, i)
	}
	b.WriteString("]")
	return []byte(b.String())
}

func serve(r *Rendering, method string, header map[string]string, cacheControl string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/x", nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	r.Serve(w, req, cacheControl)
	return w
}

func decode(t *testing.T, encoding string, body []byte) []byte {
	t.Helper()
	var rd io.Reader
	var err error
	switch encoding {
	case "":
		return body
	case "gzip":
		rd, err = gzip.NewReader(bytes.NewReader(body))
	case "zstd":
		var d *zstd.Decoder
		d, err = zstd.NewReader(bytes.NewReader(body))
		if err == nil {
			defer d.Close()
			rd = d
		}
	case "br":
		rd = brotli.NewReader(bytes.NewReader(body))
	default:
		t.Fatalf("unknown Content-Encoding %q", encoding)
	}
	if err != nil {
		t.Fatalf("%s reader: %v", encoding, err)
	}
	out, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("decode %s: %v", encoding, err)
	}
	return out
}

func TestServeNegotiatesEncodings(t *testing.T) {
	t.Parallel()
	body := bigJSON()
	r := New(JSONType, body)
	tests := []struct {
		accept string
		want   string // Content-Encoding
	}{
		{"", ""},
		{"gzip", "gzip"},
		{"x-gzip", "gzip"},
		{"GZIP", "gzip"},
		{"br", "br"},
		{"zstd", "zstd"},
		{"gzip, deflate, br, zstd", "zstd"}, // a browser: the server's order decides
		{"gzip, deflate, br", "br"},         // iOS
		{"gzip;q=1, br;q=0.5", "gzip"},
		{"br;q=0.2, gzip;q=0.8, zstd;q=0", "gzip"},
		{"*", "zstd"},
		{"*;q=0.5, gzip", "gzip"},
		{"gzip;q=0", ""},
		{"deflate, compress", ""},
		{"identity", ""},
		{"gzip;q=nonsense", ""},
		{" gzip ; q=0.9 ", "gzip"},
		{"identity;q=1, gzip;q=0.5", ""}, // identity preferred
		{"gzip;q=0.5, identity", ""},
		{"gzip;q=0.5, IDENTITY;q=0.8", ""},
		{"identity;q=0.5, gzip", "gzip"},
		{"gzip, identity", "gzip"}, // a tie: compressed
		{"zstd;q=0.1, br;q=0.1, gzip;q=0.1, *", ""},
		{"identity;q=0, gzip;q=0.1", "gzip"},
	}
	for _, tt := range tests {
		w := serve(r, "GET", map[string]string{"Accept-Encoding": tt.accept}, Public)
		if w.Code != 200 {
			t.Fatalf("Accept-Encoding %q: status %d", tt.accept, w.Code)
		}
		got := w.Header().Get("Content-Encoding")
		if got != tt.want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", tt.accept, got, tt.want)
			continue
		}
		if !bytes.Equal(decode(t, got, w.Body.Bytes()), body) {
			t.Errorf("Accept-Encoding %q: the decoded body differs from the rendering", tt.accept)
		}
		if cl := w.Header().Get("Content-Length"); cl != fmt.Sprint(w.Body.Len()) {
			t.Errorf("Accept-Encoding %q: Content-Length %s for %d bytes", tt.accept, cl, w.Body.Len())
		}
		if got != "" && w.Body.Len() >= len(body)/2 {
			t.Errorf("%s: %d bytes of %d: not compressed", got, w.Body.Len(), len(body))
		}
		wantETag := r.ETag()
		if got != "" {
			wantETag = strings.TrimSuffix(r.ETag(), `"`) + "-" + got + `"`
		}
		if w.Header().Get("ETag") != wantETag {
			t.Errorf("Accept-Encoding %q: ETag %q, want %q", tt.accept, w.Header().Get("ETag"), wantETag)
		}
		if w.Header().Get("Vary") != "Accept-Encoding" || w.Header().Get("Cache-Control") != "no-cache" ||
			w.Header().Get("Content-Type") != "application/json; charset=utf-8" {
			t.Errorf("Accept-Encoding %q: headers %v", tt.accept, w.Header())
		}
	}
}

func TestETagsDifferPerEncodingAndAreStrong(t *testing.T) {
	t.Parallel()
	r := New(JSONType, bigJSON())
	seen := map[string]bool{}
	for e := Identity; e < numEncodings; e++ {
		tag := r.ETagOf(e)
		if seen[tag] || !strings.HasPrefix(tag, `"`) || !strings.HasSuffix(tag, `"`) {
			t.Errorf("ETag of %s = %s: want a distinct strong quoted tag", e, tag)
		}
		seen[tag] = true
	}
	if New(JSONType, bigJSON()).ETag() != r.ETag() {
		t.Error("the same bytes got another ETag")
	}
	if New(JSONType, append(bigJSON(), ' ')).ETag() == r.ETag() {
		t.Error("other bytes got the same ETag")
	}
	o := NewWithETag(JSONType, bigJSON(), `"upstream"`)
	if o.ETag() != `"upstream"` || o.ETagOf(Gzip) != `"upstream-gzip"` {
		t.Errorf("NewWithETag: %s, %s", o.ETag(), o.ETagOf(Gzip))
	}
}

func TestServeNotModified(t *testing.T) {
	t.Parallel()
	r := New(JSONType, bigJSON())
	tests := []struct {
		name, inm, accept string
		want              int
		wantETag          string
	}{
		{"identity tag", r.ETag(), "", 304, r.ETag()},
		{"identity tag, client now accepts gzip", r.ETag(), "gzip", 304, r.ETag()},
		{"gzip tag", r.ETagOf(Gzip), "gzip", 304, r.ETagOf(Gzip)},
		{"gzip tag, identity asked", r.ETagOf(Gzip), "", 304, r.ETagOf(Gzip)},
		{"zstd tag among others", `"nope", ` + r.ETagOf(Zstd), "zstd", 304, r.ETagOf(Zstd)},
		{"the selected encoding's tag wins", r.ETag() + ", " + r.ETagOf(Brotli), "br", 304, r.ETagOf(Brotli)},
		{"weak form", "W/" + r.ETag(), "", 304, r.ETag()},
		{"star", "*", "gzip", 304, r.ETagOf(Gzip)},
		{"other tag", `"other"`, "gzip", 200, r.ETagOf(Gzip)},
		{"stale tag", `"` + strings.Repeat("0", 32) + `"`, "", 200, r.ETag()},
	}
	for _, tt := range tests {
		for _, method := range []string{"GET", "HEAD"} {
			w := serve(r, method, map[string]string{
				"If-None-Match": tt.inm, "Accept-Encoding": tt.accept,
				"Cache-Control": "no-cache", // a conditional request is answered all the same
			}, Private)
			if w.Code != tt.want || w.Header().Get("ETag") != tt.wantETag {
				t.Errorf("%s %s: %d ETag %s, want %d %s", method, tt.name, w.Code, w.Header().Get("ETag"), tt.want, tt.wantETag)
			}
			if w.Header().Get("Cache-Control") != "private, no-cache" || w.Header().Get("Vary") != "Accept-Encoding" {
				t.Errorf("%s %s: headers %v: want Cache-Control and Vary on 200 and 304", method, tt.name, w.Header())
			}
			if tt.want == 304 && (w.Body.Len() != 0 || w.Header().Get("Content-Length") != "" || w.Header().Get("Content-Encoding") != "") {
				t.Errorf("%s %s: a 304 with a body or body headers: %v", method, tt.name, w.Header())
			}
		}
	}
}

func TestHeadHasTheHeadersOfGet(t *testing.T) {
	t.Parallel()
	r := New(JSONType, bigJSON())
	for _, accept := range []string{"", "gzip", "br"} {
		get := serve(r, "GET", map[string]string{"Accept-Encoding": accept}, Public)
		head := serve(r, "HEAD", map[string]string{"Accept-Encoding": accept}, Public)
		if head.Code != 200 || head.Body.Len() != 0 {
			t.Errorf("HEAD %q: %d with %d bytes", accept, head.Code, head.Body.Len())
		}
		for _, k := range []string{"Content-Type", "Content-Length", "Content-Encoding", "ETag", "Vary", "Cache-Control"} {
			if get.Header().Get(k) != head.Header().Get(k) {
				t.Errorf("Accept-Encoding %q: %s is %q on GET, %q on HEAD", accept, k, get.Header().Get(k), head.Header().Get(k))
			}
		}
	}
}

func TestSmallBodiesAreNotCompressed(t *testing.T) {
	t.Parallel()
	r := New(JSONType, []byte(`{"id":"a"}`))
	w := serve(r, "GET", map[string]string{"Accept-Encoding": "gzip, br, zstd"}, Public)
	if w.Header().Get("Content-Encoding") != "" || w.Body.String() != `{"id":"a"}` || w.Header().Get("ETag") != r.ETag() {
		t.Errorf("small body: %v %q", w.Header(), w.Body.String())
	}
	if w.Header().Get("Vary") != "Accept-Encoding" {
		t.Error("Vary is missing on a small answer: a cache would serve it to every client of a larger one")
	}
}

func TestVaryKeepsWhatIsThere(t *testing.T) {
	t.Parallel()
	r := New(JSONType, bigJSON())
	req := httptest.NewRequest("GET", "/x", nil)
	w := httptest.NewRecorder()
	w.Header().Set("Vary", "Origin")
	r.Serve(w, req, Public)
	if got := w.Header().Values("Vary"); len(got) != 2 || got[0] != "Origin" || got[1] != "Accept-Encoding" {
		t.Errorf("Vary = %q, want Origin and Accept-Encoding", got)
	}
}

// Each encoding is compressed once, whatever the number of requests.
func TestEncodedOnce(t *testing.T) {
	t.Parallel()
	r := New(JSONType, bigJSON())
	var wg sync.WaitGroup
	got := make([][]byte, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = r.Encoded(Gzip)
		}()
	}
	wg.Wait()
	for i := range got {
		if &got[i][0] != &got[0][0] {
			t.Fatal("the gzip body was made more than once")
		}
	}
}

func TestJSONIsEncodingJSON(t *testing.T) {
	t.Parallel()
	r, err := JSON(map[string]any{"a": "<b>", "tags": []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body()) != `{"a":"\u003cb\u003e","tags":[]}` || r.ContentType() != JSONType {
		t.Errorf("JSON: %s (%s)", r.Body(), r.ContentType())
	}
	if _, err := JSON(func() {}); err == nil {
		t.Error("JSON of a func: no error")
	}
}

func BenchmarkServeCached(b *testing.B) {
	r := New(JSONType, bigJSON())
	for _, accept := range []string{"", "gzip"} {
		b.Run("accept="+accept, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/x", nil)
			req.Header.Set("Accept-Encoding", accept)
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				r.Serve(w, req, Public)
			}
		})
	}
}

type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// TestNegotiateAmongOffered: a streamed answer made in gzip only is sent in
// gzip when the client accepts it, whatever it prefers, and as identity
// when it accepts none of what is offered.
func TestNegotiateAmongOffered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		accept string
		want   Encoding
	}{
		{"", Identity},
		{"gzip", Gzip},
		{"br, zstd, gzip;q=0.5", Gzip},
		{"br, zstd", Identity},
		{"*", Gzip},
		{"gzip;q=0", Identity},
		{"identity;q=1, gzip;q=0.5", Identity},
	}
	for _, c := range cases {
		if got := NegotiateAmong(c.accept, Gzip); got != c.want {
			t.Errorf("NegotiateAmong(%q, gzip) = %v, want %v", c.accept, got, c.want)
		}
	}
}
