package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"

	"github.com/gin-gonic/gin"
	"golang.org/x/text/unicode/norm"

	"github.com/doclib/libs/problem"
	"github.com/doclib/services/media/internal/media"
)

// Cache-Control of downloads: the bytes behind an id never change. Back-office
// answers are private: they were asked for with credentials, and "public"
// would let shared caches keep them.
const (
	publicCache  = "public, max-age=31536000, immutable"
	privateCache = "private, max-age=31536000, immutable"
)

// download streams the file: ranges, conditional requests and HEAD are left
// to http.ServeContent, which needs the validators set before it runs.
func (h *Handler) download(c *gin.Context, cacheControl string) {
	m, obj, err := h.svc.Open(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	defer obj.Close()
	hd := c.Writer.Header()
	hd.Set("Content-Type", m.MimeType) // also stops ServeContent from sniffing
	hd.Set("ETag", `"`+m.SHA256+`"`)
	hd.Set("Content-Disposition", contentDisposition(m))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", cacheControl)
	hd.Set("Accept-Ranges", "bytes")
	if strings.Contains(c.GetHeader("Range"), ",") {
		// Several ranges would be a multipart/byteranges answer; the
		// contract promises single ranges, and ignoring Range is allowed
		// (RFC 9110 §14.2), so the whole file is sent.
		c.Request.Header.Del("Range")
	}
	body := &watchedReader{ReadSeeker: obj}
	http.ServeContent(&rangeProblem{ResponseWriter: c.Writer, size: m.Size}, c.Request, "", m.CreatedAt, body)
	if body.err != nil {
		// Headers are gone: the connection is cut, so the client sees a
		// short body and not a complete file.
		_ = c.Error(body.err)
		h.log.WarnContext(c, "download broke off", "media_id", m.ID, "error", body.err)
	}
}

// watchedReader remembers a read failure of the object, which ServeContent
// swallows.
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

// rangeProblem turns ServeContent's plain-text 416 into a problem document,
// keeping its Content-Range: bytes */size.
type rangeProblem struct {
	http.ResponseWriter
	size    int64
	swallow bool
}

func (w *rangeProblem) WriteHeader(code int) {
	if code != http.StatusRequestedRangeNotSatisfiable {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.swallow = true
	problem.Write(w.ResponseWriter, problem.New(code, "range_not_satisfiable",
		fmt.Sprintf("the requested range is not within the file's %d bytes", w.size)))
}

func (w *rangeProblem) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// contentDisposition is the RFC 6266 header for m: inline for PDF and images
// (the app opens them in a web view), attachment for anything else; an ASCII
// filename for old clients and, when the name is not plain ASCII, the exact
// name as filename* (RFC 8187).
func contentDisposition(m media.Media) string {
	kind := "attachment"
	if m.MimeType == "application/pdf" || m.IsImage() {
		kind = "inline"
	}
	fallback := asciiName(m.Name)
	v := kind + `; filename="` + fallback + `"`
	if fallback != m.Name {
		v += "; filename*=UTF-8''" + encodeRFC8187(m.Name)
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

// encodeRFC8187 percent-encodes s as an RFC 8187 value-chars: UTF-8 bytes,
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
