package httpx

import (
	"net/http"
	"strings"
	"time"
)

// LastModified is the Last-Modified to send for a representation last
// changed at modified (exact), asked at now: the end of the second of the
// change, once that second is over, else none (the zero time). HTTP dates
// have seconds, so two versions written within one second would share a
// date, and net/http, comparing seconds, would answer the newer one's
// request with the older one's 304 or range. A date handed out only once
// its second is over names the last version of that second, which no
// later change can share; with it, net/http's own comparison (304 when the
// request's date is at or after it, a range for exactly it) is provably
// right. Used where the bytes behind a URL can change (a document's
// download); a media's bytes never change, so its dates need no such care.
func LastModified(modified, now time.Time) time.Time {
	lm := modified.Truncate(time.Second)
	if lm.Before(modified) {
		lm = lm.Add(time.Second)
	}
	if lm.After(now) {
		return time.Time{}
	}
	return lm
}

// DropUnprovableDates removes the date conditions of r that do not hold
// for a representation last changed at modified and sent with
// lastModified (LastModified), for a handler that passes r on to one that
// compares other dates: If-Modified-Since stays only when the change is at
// or before its date, a date If-Range only when it is lastModified.
func DropUnprovableDates(r *http.Request, modified, lastModified time.Time) {
	if v := r.Header.Get("If-Modified-Since"); v != "" {
		if t, err := http.ParseTime(v); err != nil || modified.After(t) {
			r.Header.Del("If-Modified-Since")
		}
	}
	if v := r.Header.Get("If-Range"); v != "" && !strings.HasPrefix(v, `"`) && !strings.HasPrefix(v, "W/") {
		if t, err := http.ParseTime(v); err != nil || lastModified.IsZero() || !t.Equal(lastModified) {
			r.Header.Del("Range")
			r.Header.Del("If-Range")
		}
	}
}
