package media

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/doclib/libs/validation"
)

// MaxNameChars bounds a media name (CONTRACT.md §4: at most 255 characters).
const MaxNameChars = 255

// maxExtChars is the longest tail after the last dot that counts as an
// extension and survives a cut; a longer one is part of the name.
const maxExtChars = 16

// DefaultName names a file whose uploaded name has nothing left.
const DefaultName = "file"

// CleanName reduces an uploaded file name to a safe base name: no
// directories (both / and \ separate, whatever the server's OS), no control
// or bidirectional characters, valid UTF-8 in NFC, trimmed of white space
// and invisible characters, at most MaxNameChars characters; "file" when
// nothing is left. A name cut to fit keeps its extension ("long….pdf"
// stays a .pdf).
func CleanName(raw string) string {
	if i := strings.LastIndexAny(raw, `/\`); i >= 0 {
		raw = raw[i+1:]
	}
	raw = validation.StripUnsafe(strings.ToValidUTF8(raw, ""))
	name := validation.Trim(norm.NFC.String(raw))
	if utf8.RuneCountInString(name) > MaxNameChars {
		base, ext := splitExt(name)
		base = validation.Trim(firstChars(base, MaxNameChars-utf8.RuneCountInString(ext)))
		name = base + ext
	}
	if name == "" || name == "." || name == ".." {
		return DefaultName
	}
	return name
}

// splitExt splits name before its last dot when what follows is a short
// extension of letters and digits; otherwise ext is "".
func splitExt(name string) (base, ext string) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 {
		return name, ""
	}
	ext = name[i:]
	if n := utf8.RuneCountInString(ext) - 1; n == 0 || n > maxExtChars {
		return name, ""
	}
	for _, r := range ext[1:] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return name, ""
		}
	}
	return name[:i], ext
}

// firstChars returns the first n characters of s.
func firstChars(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}
