package httpx

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseRange(t *testing.T) {
	const size = 10
	single := func(start, length int64) ByteRange { return ByteRange{Kind: RangeSingle, Start: start, Length: length} }
	none, bad := ByteRange{}, ByteRange{Kind: RangeUnsatisfiable}
	tests := map[string]ByteRange{
		"":                             none,
		"bytes=0-":                     single(0, 10),
		"bytes=2-4":                    single(2, 3),
		"bytes=9-20":                   single(9, 1),
		"bytes=-3":                     single(7, 3),
		"bytes=-100":                   single(0, 10),
		"Bytes=1-1":                    single(1, 1),
		"bytes= 1-2 ":                  single(1, 2),
		"bytes=1-2,":                   single(1, 2),
		"bytes=-0":                     bad, // a suffix of nothing
		"bytes=10-":                    bad,
		"bytes=5-2":                    bad,
		"bytes=+1-2":                   bad,
		"bytes=1-+2":                   bad,
		"bytes=0x1-2":                  bad,
		"bytes=-":                      bad,
		"bytes=":                       bad,
		"bytes=1":                      bad,
		"bytes=1 -2":                   bad,
		"bytes":                        bad,
		"bytes=1-2,x":                  bad,
		"bytes=50-,60-":                bad,
		"bytes=0-1,4-5":                none, // several: the whole body
		"bytes=0-1,50-":                none,
		"items=0-1":                    none, // another unit is ignored
		"bytes=99999999999999999999-":  bad,
		"bytes=0-99999999999999999999": single(0, 10),
	}
	for header, want := range tests {
		if got := ParseRange(header, size); got != want {
			t.Errorf("ParseRange(%q, %d) = %+v, want %+v", header, size, got, want)
		}
	}
	if got := ParseRange("bytes=0-", 0); got != bad {
		t.Errorf("a range of an empty body = %+v, want unsatisfiable", got)
	}
}

func TestServeContentErrorsAreProblemsNoCacheKeeps(t *testing.T) {
	body := "0123456789"
	serve := func(headers ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/", nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "text/plain")
		rec.Header().Set("ETag", `"e"`)
		rec.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		if err := ServeContent(rec, req, time.Unix(1e9, 0), int64(len(body)), strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	for _, tt := range []struct {
		name    string
		headers []string
		status  int
		code    string
	}{
		{"empty suffix", []string{"Range", "bytes=-0"}, 416, "range_not_satisfiable"},
		{"If-Match fails", []string{"If-Match", `"other"`}, 412, "precondition_failed"},
		{"If-Unmodified-Since fails", []string{"If-Unmodified-Since", "Sat, 01 Jan 2000 00:00:00 GMT"}, 412, "precondition_failed"},
	} {
		rec := serve(tt.headers...)
		if rec.Code != tt.status || rec.Header().Get("Content-Type") != "application/problem+json" ||
			!strings.Contains(rec.Body.String(), `"code":"`+tt.code+`"`) {
			t.Errorf("%s: %d %s %s, want a %d problem %s", tt.name, rec.Code, rec.Header().Get("Content-Type"), rec.Body, tt.status, tt.code)
		}
		if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tt.name, cc)
		}
		if rec.Header().Get("ETag") != "" || rec.Header().Get("Last-Modified") != "" {
			t.Errorf("%s: validators on an error: %v", tt.name, rec.Header())
		}
	}
	// A 304 keeps the file's caching (RFC 9111 §4.3.4 updates the stored response with it).
	if rec := serve("If-None-Match", `"e"`); rec.Code != 304 || rec.Header().Get("Cache-Control") == "no-store" {
		t.Errorf("304: %d %v", rec.Code, rec.Header())
	}
	// If-Range that does not match: the whole body, even for a bad range.
	if rec := serve("Range", "bytes=-0", "If-Range", `"other"`); rec.Code != 200 || rec.Body.String() != body {
		t.Errorf("If-Range mismatch: %d %q", rec.Code, rec.Body)
	}
}
