package media_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/doclib/libs/validation"
	"github.com/doclib/services/media/internal/media"
)

// FuzzCleanName checks the multipart file name cleaning: whatever the
// uploader sends, the name is a safe base name within the limit, and
// cleaning it again changes nothing.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"report.pdf", "../../etc/passwd", `C:\dir\x.pdf`, "evil\u202Egpj.html",
		"re\u0301sume\u0301.pdf", "bad\xffutf8.pdf", "\u200b", strings.Repeat("é", 300) + ".pdf", "..", " . ",
		strings.Repeat("a", 254) + "\u0301.pdf", "a.\u0301pdf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := media.CleanName(raw)
		switch {
		case got == "":
			t.Fatalf("CleanName(%q) is empty", raw)
		case !utf8.ValidString(got) || !norm.NFC.IsNormalString(got):
			t.Fatalf("CleanName(%q) = %q: not valid NFC UTF-8", raw, got)
		case utf8.RuneCountInString(got) > media.MaxNameChars:
			t.Fatalf("CleanName(%q) = %d characters", raw, utf8.RuneCountInString(got))
		case strings.ContainsAny(got, `/\`) || got == "." || got == "..":
			t.Fatalf("CleanName(%q) = %q: a path", raw, got)
		case strings.IndexFunc(got, func(r rune) bool { return unicode.IsControl(r) || validation.IsBidiControl(r) }) >= 0:
			t.Fatalf("CleanName(%q) = %q: control or bidi characters", raw, got)
		case validation.Trim(got) != got:
			t.Fatalf("CleanName(%q) = %q: not trimmed", raw, got)
		}
		if again := media.CleanName(got); again != got {
			t.Fatalf("CleanName(%q) = %q, and again %q", raw, got, again)
		}
	})
}
