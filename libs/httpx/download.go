package httpx

import (
	"mime"
	"strings"
	"unicode"
)

// ContentDisposition returns a Content-Disposition value (RFC 6266) for
// disposition ("inline" or "attachment") and filename: a plain filename=
// for ASCII names, and for others an ASCII fallback plus filename* in UTF-8
// (RFC 8187). Quotes, backslashes and control characters never reach the
// header.
func ContentDisposition(disposition, filename string) string {
	clean := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '"' || r == '\\' || r == '/' {
			return '_'
		}
		return r
	}, filename)
	if clean == "" {
		clean = "file"
	}
	ascii := strings.Map(func(r rune) rune {
		if r > unicode.MaxASCII {
			return '_'
		}
		return r
	}, clean)
	if ascii == clean {
		return disposition + `; filename="` + clean + `"`
	}
	// mime.FormatMediaType writes filename* with percent-encoding for a
	// non-ASCII value.
	ext := mime.FormatMediaType(disposition, map[string]string{"filename": clean})
	return disposition + `; filename="` + ascii + `"` + strings.TrimPrefix(ext, disposition)
}
