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
	} {
		if got := media.CleanName(c.raw); got != c.want {
			t.Errorf("CleanName(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
	long := strings.Repeat("€", 100) // 300 bytes
	got := media.CleanName(long)
	if len(got) > media.MaxNameBytes || !utf8.ValidString(got) || len(got) != 255 {
		t.Errorf("CleanName of 300 bytes gave %d bytes (valid UTF-8: %v), want 255 cut on a character boundary", len(got), utf8.ValidString(got))
	}
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
