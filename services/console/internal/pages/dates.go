package pages

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// zoneCookie holds the editor's time zone (an IANA name), which the
// console's script reads from the browser; without it times are in UTC.
const zoneCookie = "tz"

// zone is the editor's time zone: the form's tz field, the tz cookie, or
// UTC.
func zone(c *gin.Context) *time.Location {
	name := c.PostForm("tz")
	if name == "" {
		name, _ = c.Cookie(zoneCookie)
	}
	if name == "" || len(name) > 64 {
		return time.UTC
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return time.UTC
	}
	return loc
}

// exact is an RFC 3339 time in loc, as people write it ("" for none; the
// value itself when it is not a time).
func exact(rfc string, loc *time.Location) string {
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return rfc
	}
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("Mon 2 Jan 2006, 15:04 MST")
}

// relative is how long ago (or in how long) t is from now, in words.
func relative(t, now time.Time) string {
	d := now.Sub(t)
	future := d < 0
	d = time.Duration(math.Abs(float64(d)))
	var s string
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		s = plural(int(d/time.Minute), "min")
	case d < 24*time.Hour:
		s = plural(int(d/time.Hour), "hour")
	case d < 30*24*time.Hour:
		s = plural(int(d/(24*time.Hour)), "day")
	default:
		return t.Format("2 Jan 2006")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func plural(n int, unit string) string {
	if n == 1 || unit == "min" {
		return fmt.Sprintf("%d %s", n, unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// when is a <time> element for an RFC 3339 time: relative words, the
// exact time on hover. The script keeps the words current and puts the
// exact time in the browser's own zone (the server's is UTC unless the
// page knows the editor's).
func when(rfc string) template.HTML {
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return template.HTML(template.HTMLEscapeString(rfc)) //nolint:gosec // escaped
	}
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`, //nolint:gosec // escaped fields
		template.HTMLEscapeString(rfc), template.HTMLEscapeString(exact(rfc, time.UTC)), template.HTMLEscapeString(relative(t, time.Now()))))
}

// kinds are the document types in words.
var kinds = map[string]string{"PDF": "PDF file", "LINK": "Link", "MARKDOWN": "Markdown text", "HTML": "HTML page"}

// kind is a document type in words.
func kind(t string) string {
	if k, ok := kinds[t]; ok {
		return k
	}
	return t
}

// mediaKind is a media type in words ("PNG image", "PDF document").
func mediaKind(mime string) string {
	switch {
	case mime == "application/pdf":
		return "PDF document"
	case strings.HasPrefix(mime, "image/"):
		return strings.ToUpper(strings.TrimPrefix(strings.TrimPrefix(mime, "image/"), "x-")) + " image"
	}
	return mime
}
