package validation

import (
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzHTTPURL checks LINK url normalisation: an accepted URL comes out as an
// absolute http(s) URL of printable ASCII that net/url parses back to the
// same host, and normalising it again changes nothing.
func FuzzHTTPURL(f *testing.F) {
	for _, s := range []string{"https://example.org", "HTTPS://Bücher.Example/café?q=é#frag", "http://[::1]:8080/x",
		"http://xn--zz.example", "http://evil\u202e.com", "https://a.org/<script>", "javascript:alert(1)",
		"http://user:pw@x.org", "http://x.org:0", "http://x.org:/p", "http://１２７.0.0.1", "http://a..b/", "http:x.org",
		"https://example.org/a%2Fb?x=%zz", "https://ｅｘａｍｐｌｅ.org", "http://a_b.example.org/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, msg := HTTPURL(raw)
		if msg != "" {
			if got != "" {
				t.Fatalf("HTTPURL(%q) = %q with error %q", raw, got, msg)
			}
			return
		}
		for i := 0; i < len(got); i++ {
			if got[i] <= ' ' || got[i] >= 0x7f || strings.IndexByte("\"<>\\^`{|}", got[i]) >= 0 {
				t.Fatalf("HTTPURL(%q) = %q: byte %#x at %d", raw, got, got[i], i)
			}
		}
		u, err := url.Parse(got)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			t.Fatalf("HTTPURL(%q) = %q, which parses as %+v (%v)", raw, got, u, err)
		}
		if again, msg := HTTPURL(got); again != got {
			t.Fatalf("HTTPURL(%q) = %q, then %q (%s)", raw, got, again, msg)
		}
	})
}

// FuzzText checks the text rules: trimming is idempotent and leaves no
// white space or invisible character at either end; stripped text has no
// control or bidirectional character; a text UnsafeText accepts has none of
// either kind that it must refuse.
func FuzzText(f *testing.F) {
	for _, s := range []string{"Guide", " \u200b ", "evil\u202egpj.html", "a\tb", "x\u0085", "\u05d0\u200f1", "\ufeffx\ufeff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tr := Trim(s)
		if Trim(tr) != tr {
			t.Fatalf("Trim(%q) = %q, then %q", s, tr, Trim(tr))
		}
		if r, _ := utf8.DecodeRuneInString(tr); tr != "" && (unicode.IsSpace(r) || IsInvisible(r)) {
			t.Fatalf("Trim(%q) = %q starts with U+%04X", s, tr, r)
		}
		if r, _ := utf8.DecodeLastRuneInString(tr); tr != "" && (unicode.IsSpace(r) || IsInvisible(r)) {
			t.Fatalf("Trim(%q) = %q ends with U+%04X", s, tr, r)
		}
		st := StripUnsafe(s)
		if strings.IndexFunc(st, func(r rune) bool { return unicode.IsControl(r) || IsBidiControl(r) }) >= 0 {
			t.Fatalf("StripUnsafe(%q) = %q", s, st)
		}
		if UnsafeText(s) == "" && strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || IsBidiOverride(r) }) >= 0 {
			t.Fatalf("UnsafeText(%q) accepted it", s)
		}
	})
}
