package httpx

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The fuzz targets' seeds (here and in testdata/fuzz) run as ordinary tests
// in make test; `go test -fuzz FuzzX` explores from them.

func FuzzParseRange(f *testing.F) {
	for _, h := range []string{"", "bytes=0-", "bytes=-0", "bytes=2-4", "bytes=-3", "bytes=5-2", "bytes=+1-2",
		"bytes=0-1,4-5", "bytes= 1-2 ,", "items=1-2", "bytes=99999999999999999999-", "bytes=-99999999999999999999"} {
		f.Add(h, uint16(10))
		f.Add(h, uint16(0))
	}
	f.Fuzz(func(t *testing.T, header string, size16 uint16) {
		size := int64(size16)
		r := ParseRange(header, size)
		switch r.Kind {
		case RangeSingle:
			if r.Start < 0 || r.Length < 1 || r.Start+r.Length > size {
				t.Fatalf("ParseRange(%q, %d) = %+v: outside the body", header, size, r)
			}
		case RangeNone, RangeUnsatisfiable:
			if r.Start != 0 || r.Length != 0 {
				t.Fatalf("ParseRange(%q, %d) = %+v: offsets without a range", header, size, r)
			}
		default:
			t.Fatalf("ParseRange(%q, %d): kind %d", header, size, r.Kind)
		}
		canonical := r.Header(size)
		if again := ParseRange(canonical, size); canonical != "" && again != r {
			t.Fatalf("ParseRange(%q) = %+v but its canonical form %q reads as %+v", header, r, canonical, again)
		}
		// net/http serves what ParseRange decided.
		body := strings.Repeat("x", int(size))
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Range", header)
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/octet-stream")
		if err := ServeContent(rec, req, time.Unix(0, 0), size, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		want := map[RangeKind]int{RangeNone: 200, RangeSingle: 206, RangeUnsatisfiable: 416}[r.Kind]
		if strings.TrimSpace(header) == "" || size == 0 { // net/http sends an empty body whole
			want = 200
		}
		if rec.Code != want {
			t.Fatalf("Range %q on %d bytes: status %d, want %d (%+v)", header, size, rec.Code, want, r)
		}
		if r.Kind == RangeSingle {
			cr := fmt.Sprintf("bytes %d-%d/%d", r.Start, r.Start+r.Length-1, size)
			if rec.Header().Get("Content-Range") != cr || int64(rec.Body.Len()) != r.Length {
				t.Fatalf("Range %q: Content-Range %q and %d bytes, want %q", header, rec.Header().Get("Content-Range"), rec.Body.Len(), cr)
			}
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, b := range []string{`{"id":"a","name":"b","sources":["s"]}`, `{"ID":"a"}`, `{"id":"a","id":"b"}`,
		"{\"name\":\"a\xffb\"}", `{"name":"\ud800"}`, `{"name":"\ud83d\ude00"}`, `{"sources":[null]}`,
		`{"sources":"x","id":1}`, `[]`, `{} {}`, ``, `{"x":{"a":1,"a":2}}`, `{"id":null}`} {
		f.Add([]byte(b))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var got bindShape
		p := DecodeJSON(body, &got)
		if p != nil {
			if p.Status == 422 && json.Valid(body) { // a misspelled field (FuzzDecodeJSON checks decoding alone)
				return
			}
			if p.Status != 400 || p.Code != "bad_request" {
				t.Fatalf("DecodeJSON(%q) = %+v, want a 400", body, p)
			}
			return
		}
		if !utf8.Valid(body) || !json.Valid(body) {
			t.Fatalf("DecodeJSON accepted %q, which is not valid UTF-8 JSON", body)
		}
		for _, s := range append([]string{got.ID, got.Name}, got.Sources...) {
			if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) && !strings.Contains(string(body), "\\ufffd") &&
				!strings.Contains(string(body), "\\uFFFD") && !strings.ContainsRune(string(body), utf8.RuneError) {
				t.Fatalf("DecodeJSON(%q) made %q: a replaced character", body, s)
			}
		}
		// Names match exactly: what encoding/json folds into a field, strict decoding leaves out.
		var loose bindShape
		if err := json.Unmarshal(body, &loose); err == nil && (loose.ID != got.ID || loose.Name != got.Name) {
			var raw map[string]any
			_ = json.Unmarshal(body, &raw)
			if _, ok := raw["id"]; ok {
				if _, ok := raw["name"]; ok {
					t.Fatalf("DecodeJSON(%q) = %+v, encoding/json %+v, with exact keys present", body, got, loose)
				}
			}
		}
	})
}
