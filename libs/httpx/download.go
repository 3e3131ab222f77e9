package httpx

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/validation"
)

// ServeContent sends body (size bytes, last changed at modTime) with
// http.ServeContent, so Range (206/416), If-None-Match, If-Range and
// If-Modified-Since (304) are answered by net/http. The caller sets
// Content-Type, ETag, Content-Disposition and Cache-Control first.
//
// Three things differ from plain ServeContent: the Range header is read by
// ParseRange, which is stricter than net/http's ("bytes=-0" is 416, not an
// empty 206); a request for several ranges is answered with the whole body
// (RFC 9110 §14.2 allows ignoring Range; the contract promises single
// ranges only); and an error (416, 412) is a problem document that no cache
// keeps, whatever Cache-Control the caller set for the file. It returns the
// error of a read that failed once headers were sent: the connection is
// then cut, so the client sees a short body and never a complete-looking one.
func ServeContent(w http.ResponseWriter, r *http.Request, modTime time.Time, size int64, body io.ReadSeeker) error {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Accept-Ranges", "bytes")
	if v := r.Header.Get("Range"); v != "" {
		if canonical := ParseRange(v, size).Header(size); canonical != "" {
			r.Header.Set("Range", canonical)
		} else {
			r.Header.Del("Range")
		}
	}
	rd := &watchedReader{ReadSeeker: body}
	http.ServeContent(&errorProblem{ResponseWriter: w, size: size}, r, "", modTime, rd)
	return rd.err
}

// watchedReader remembers a read failure, which ServeContent swallows.
type watchedReader struct {
	io.ReadSeeker
	err error
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.ReadSeeker.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// errorProblem turns ServeContent's plain-text errors into problem
// documents, which carry Cache-Control: no-store: the caller's caching of
// the file must not make a 412 or a 416 cacheable.
type errorProblem struct {
	http.ResponseWriter
	size    int64
	swallow bool
}

func (w *errorProblem) WriteHeader(code int) {
	if code < 400 {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.swallow = true
	var p *problem.Problem
	switch code {
	case http.StatusRequestedRangeNotSatisfiable:
		p = problem.New(code, "range_not_satisfiable",
			fmt.Sprintf("the requested range is not within the file's %d bytes", w.size))
	case http.StatusPreconditionFailed:
		p = problem.New(code, "precondition_failed", "the file does not match the request's If-Match or If-Unmodified-Since")
	default:
		p = problem.New(code, "bad_request", "the download could not be served")
	}
	problem.Write(w.ResponseWriter, p)
}

func (w *errorProblem) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets streamed bodies through when the writer can flush.
func (w *errorProblem) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// ContentDisposition returns the RFC 6266 header for a download named name:
// disposition is "inline" or "attachment"; an ASCII filename for old
// clients and, when the name is not plain ASCII, the name as filename*
// (RFC 8187). Control and bidirectional characters are dropped from both,
// whatever the stored name holds, so no name can display its extension
// reversed.
func ContentDisposition(disposition, name string) string {
	name = strings.TrimSpace(validation.StripUnsafe(strings.ToValidUTF8(name, "")))
	if name == "" {
		name = "file"
	}
	fallback := asciiName(name)
	v := disposition + `; filename="` + fallback + `"`
	if fallback != name {
		v += "; filename*=UTF-8''" + encodeRFC8187(name)
	}
	return v
}

// asciiName drops accents (é -> e) and replaces every other character that
// is not plain printable ASCII, or would need escaping in a quoted string
// (", \) or be percent-decoded by some browsers (%), with '_'.
func asciiName(name string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(name) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case r < 0x20 || r >= 0x7f || r == '"' || r == '\\' || r == '%':
			b.WriteByte('_')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// encodeRFC8187 percent-encodes s as RFC 8187 value-chars: UTF-8 bytes,
// attr-char kept as they are.
func encodeRFC8187(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAttrChar(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func isAttrChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$&+-.^_`|~", c) >= 0
}

// ETagMatch reports whether an If-None-Match header value matches etag (a
// strong, quoted tag): "*", or any tag of the list compared weakly, as RFC
// 9110 §13.1.2 says for If-None-Match.
func ETagMatch(ifNoneMatch, etag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for _, t := range strings.Split(ifNoneMatch, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}
