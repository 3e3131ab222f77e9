package media

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxNameBytes bounds a media name (CONTRACT.md §4: at most 255; bytes, so
// it also fits every file system's limit).
const MaxNameBytes = 255

// DefaultName names a file whose uploaded name has nothing left.
const DefaultName = "file"

// CleanName reduces an uploaded file name to a safe base name: no
// directories (both / and \ separate, whatever the server's OS), no control
// or bidirectional-override characters, valid UTF-8 in NFC, trimmed, at most
// MaxNameBytes cut on a character boundary; "file" when nothing is left.
func CleanName(raw string) string {
	if i := strings.LastIndexAny(raw, `/\`); i >= 0 {
		raw = raw[i+1:]
	}
	raw = strings.ToValidUTF8(raw, "")
	raw = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || isBidiControl(r) {
			return -1
		}
		return r
	}, raw)
	name := strings.TrimSpace(norm.NFC.String(raw))
	if len(name) > MaxNameBytes {
		cut := MaxNameBytes
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = strings.TrimSpace(name[:cut])
	}
	if name == "" || name == "." || name == ".." {
		return DefaultName
	}
	return name
}

// isBidiControl reports the characters that reorder text: they make
// "evil\u202Efdp.exe" display as "evilexe.pdf".
func isBidiControl(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || r == 0x200E || r == 0x200F || r == 0x061C
}
