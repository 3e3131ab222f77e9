package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/httpx"
)

// TestDatesWithinOneSecond (issue 21 item 2): a representation changed
// within the second its Last-Modified names is never answered 304 or a
// range by that date; one changed before, or exactly at it, is.
func TestDatesWithinOneSecond(t *testing.T) {
	second := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	date := second.Format(http.TimeFormat)
	cases := []struct {
		name     string
		modified time.Time
		header   string
		want     int
	}{
		{"changed later in the date's second", second.Add(700 * time.Millisecond), "If-Modified-Since", 200},
		{"changed exactly at the date", second, "If-Modified-Since", 304},
		{"changed in an earlier second", second.Add(-300 * time.Millisecond), "If-Modified-Since", 304},
		{"range by date, changed within its second", second.Add(700 * time.Millisecond), "If-Range", 200},
		{"range by date, changed exactly at it", second, "If-Range", 206},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/x", nil)
			r.Header.Set(tc.header, date)
			if tc.header == "If-Range" {
				r.Header.Set("Range", "bytes=0-1")
			}
			httpx.DropUnprovableDates(r, tc.modified)
			w := httptest.NewRecorder()
			_ = httpx.ServeContent(w, r, tc.modified, 5, strings.NewReader("hello"))
			if w.Code != tc.want {
				t.Errorf("%s %s, modified %s: %d, want %d", tc.header, date, tc.modified.Format(time.RFC3339Nano), w.Code, tc.want)
			}
		})
	}
}
