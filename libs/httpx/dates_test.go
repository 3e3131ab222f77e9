package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/httpx"
)

// TestDatesWithinOneSecond (issue 21 item 2): a representation served with
// httpx.LastModified is answered 304, or a range, by date only when that is
// provably right, also when versions change within one second.
func TestDatesWithinOneSecond(t *testing.T) {
	second := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	v1, v2 := second.Add(200*time.Millisecond), second.Add(700*time.Millisecond)
	serve := func(modified, now time.Time, header, value string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/x", nil)
		if header != "" {
			r.Header.Set(header, value)
			r.Header.Set("Range", "bytes=0-1")
			if header == "If-Modified-Since" {
				r.Header.Del("Range")
			}
		}
		w := httptest.NewRecorder()
		_ = httpx.ServeContent(w, r, httpx.LastModified(modified, now), 5, strings.NewReader("hello"))
		return w
	}
	// v1 asked within its second: no date to compare later.
	if lm := serve(v1, v1.Add(100*time.Millisecond), "", "").Header().Get("Last-Modified"); lm != "" {
		t.Errorf("Last-Modified within the second of the change: %q, want none", lm)
	}
	// v2, the last version of that second, asked after it: a date.
	lm := serve(v2, second.Add(3*time.Second), "", "").Header().Get("Last-Modified")
	if want := second.Add(time.Second).Format(http.TimeFormat); lm != want {
		t.Fatalf("Last-Modified after the second: %q, want %q", lm, want)
	}
	if w := serve(v2, second.Add(5*time.Second), "If-Modified-Since", lm); w.Code != 304 {
		t.Errorf("unchanged, If-Modified-Since its Last-Modified: %d, want 304", w.Code)
	}
	if w := serve(v2, second.Add(5*time.Second), "If-Range", lm); w.Code != 206 {
		t.Errorf("unchanged, If-Range its Last-Modified: %d, want 206", w.Code)
	}
	// The date of the second itself (a Date header taken while v1 was
	// current, say) does not cover v2.
	date := second.Format(http.TimeFormat)
	if w := serve(v2, second.Add(5*time.Second), "If-Modified-Since", date); w.Code != 200 {
		t.Errorf("changed within the second, If-Modified-Since that second: %d, want 200", w.Code)
	}
	// A later change, v3, is never covered by v2's date.
	v3 := second.Add(1500 * time.Millisecond)
	if w := serve(v3, second.Add(5*time.Second), "If-Modified-Since", lm); w.Code != 200 {
		t.Errorf("changed after the date, If-Modified-Since it: %d, want 200", w.Code)
	}
	if w := serve(v3, second.Add(5*time.Second), "If-Range", lm); w.Code != 200 {
		t.Errorf("changed after the date, If-Range it: %d, want 200", w.Code)
	}
}

// TestDropUnprovableDates: what a handler passing the request on keeps.
func TestDropUnprovableDates(t *testing.T) {
	second := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	modified := second.Add(700 * time.Millisecond)
	lm := httpx.LastModified(modified, second.Add(5*time.Second))
	for _, tc := range []struct {
		header, value string
		kept          bool
	}{
		{"If-Modified-Since", second.Format(http.TimeFormat), false},
		{"If-Modified-Since", lm.Format(http.TimeFormat), true},
		{"If-Range", second.Format(http.TimeFormat), false},
		{"If-Range", lm.Format(http.TimeFormat), true},
	} {
		r := httptest.NewRequest("GET", "/x", nil)
		r.Header.Set(tc.header, tc.value)
		httpx.DropUnprovableDates(r, modified, lm)
		if kept := r.Header.Get(tc.header) != ""; kept != tc.kept {
			t.Errorf("%s %s: kept %v, want %v", tc.header, tc.value, kept, tc.kept)
		}
	}
}
