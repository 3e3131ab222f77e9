package httpx

import (
	"net/http"
	"strings"
	"time"
)

// DropUnprovableDates removes the date conditions of r that cannot be
// answered rightly for a representation last changed at modified (exact
// time), so that net/http serves the whole body instead. HTTP dates have
// seconds: two versions written within one second share a Last-Modified,
// and net/http, comparing seconds, would answer the newer one's request
// with the older one's 304 or range. A date condition holds only when the
// change is provably at or before the date: modified <= date, exactly.
// Used where the bytes behind a URL can change (a document's download);
// a media's bytes never change, so its dates need no such care.
func DropUnprovableDates(r *http.Request, modified time.Time) {
	if v := r.Header.Get("If-Modified-Since"); v != "" {
		if t, err := http.ParseTime(v); err != nil || modified.After(t) {
			r.Header.Del("If-Modified-Since")
		}
	}
	if v := r.Header.Get("If-Range"); v != "" && !strings.HasPrefix(v, `"`) && !strings.HasPrefix(v, "W/") {
		// A date: the range stands only for the very version it names.
		if t, err := http.ParseTime(v); err != nil || !t.Equal(modified) {
			r.Header.Del("Range")
			r.Header.Del("If-Range")
		}
	}
}
