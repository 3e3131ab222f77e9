package media_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/doclib/services/media/internal/media"
)

func TestCleanName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ raw, want string }{
		{"report.pdf", "report.pdf"},
		{"../../etc/passwd", "passwd"},
		{`C:\dir\x.pdf`, "x.pdf"},
		{`..\..\win.ini`, "win.ini"},
		{"a/b\\c/d.png", "d.png"},
		{"re\u0301sume\u0301.pdf", "r\u00e9sum\u00e9.pdf"},
		{"  spaced .pdf  ", "spaced .pdf"},
		{"nul\x00and\x7fdel\u0085.pdf", "nulanddel.pdf"},
		{"evil\u202Efdp.exe", "evilfdp.exe"},
		{"bad\xffutf8.pdf", "badutf8.pdf"},
		{"", "file"},
		{"/", "file"},
		{"..", "file"},
		{"\x01\x02", "file"},
		{"\u200b\u200b", "file"},
		{"\u200bname\ufeff.pdf\u200b", "name\ufeff.pdf"},
		{"evil\u200fgpj.html", "evilgpj.html"},
	} {
		if got := media.CleanName(c.raw); got != c.want {
			t.Errorf("CleanName(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	// The limit counts characters, and a cut keeps the extension.
	for _, c := range []struct{ raw, want string }{
		{strings.Repeat("€", 100), strings.Repeat("€", 100)},
		{strings.Repeat("€", 300), strings.Repeat("€", 255)},
		{strings.Repeat("é", 300) + ".pdf", strings.Repeat("é", 251) + ".pdf"},
		{strings.Repeat("a", 300) + ".tar.gz", strings.Repeat("a", 252) + ".gz"},
		{strings.Repeat("a", 250) + "     x.pdf", strings.Repeat("a", 250) + ".pdf"},
		{strings.Repeat("a", 300) + ".this-is-no-ext", strings.Repeat("a", 255)},
		{strings.Repeat("a", 300) + ".", strings.Repeat("a", 255)},
	} {
		got := media.CleanName(c.raw)
		if got != c.want || !utf8.ValidString(got) {
			t.Errorf("CleanName(%d characters ending %q) = %d characters ending %q, want %d ending %q", utf8.RuneCountInString(c.raw),
				tail(c.raw), utf8.RuneCountInString(got), tail(got), utf8.RuneCountInString(c.want), tail(c.want))
		}
	}
}

func tail(s string) string {
	r := []rune(s)
	return string(r[max(0, len(r)-8):])
}

func TestNewID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 1000 {
		id := media.NewID()
		if len(id) != 22 || !media.ValidID(id) || seen[id] {
			t.Fatalf("NewID() = %q: want 22 URL-safe characters (128 bits), unique", id)
		}
		seen[id] = true
	}
}
