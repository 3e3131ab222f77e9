package idempotency

import (
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in, want string
		ok       bool
	}{
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`8e03978e-40d5-43e8-bc93-6894a57f9324`, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`""`, "", false},
		{`"a b"`, "", false},
		{`"a"b"`, "", false},
		{`"é"`, "", false},
		{`"` + strings.Repeat("k", 256) + `"`, "", false},
		{strings.Repeat("k", 255), strings.Repeat("k", 255), true},
	} {
		got, err := ParseKey(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

func TestScopedIDAndFingerprint(t *testing.T) {
	t.Parallel()
	if ScopedID("alice", "k") == ScopedID("bob", "k") || ScopedID("a", "bk") == ScopedID("ab", "k") {
		t.Error("keys of different callers must not meet")
	}
	fp := func(method, path, body string) string {
		f := NewFingerprinter(method, path)
		_, _ = f.Write([]byte(body))
		return f.Sum()
	}
	if fp("POST", "/bo/tags", "{}") != fp("POST", "/bo/tags", "{}") {
		t.Error("the same request must have the same fingerprint")
	}
	if fp("POST", "/bo/tags", "{}") == fp("POST", "/bo/tags-categories", "{}") || fp("POST", "/bo/tags", "{}") == fp("POST", "/bo/tags", "{ }") {
		t.Error("another path or body must have another fingerprint")
	}
}

func TestAMultipartFingerprintIgnoresTheBoundary(t *testing.T) {
	t.Parallel()
	body := func(b, content string) string {
		return "--" + b + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.pdf\"\r\n\r\n" + content + "\r\n--" + b + "--\r\n"
	}
	fp := func(b, content string, chunk int) string {
		f := NewMultipartFingerprinter("POST", "/bo/medias", b)
		s := body(b, content)
		for i := 0; i < len(s); i += chunk {
			_, _ = f.Write([]byte(s[i:min(i+chunk, len(s))]))
		}
		return f.Sum()
	}
	first := fp("boundary-one-1234", "%PDF-1.4 same bytes", 1000)
	for _, chunk := range []int{1, 3, 7, 1000} {
		if got := fp("another-boundary-98765", "%PDF-1.4 same bytes", chunk); got != first {
			t.Errorf("the same parts with another boundary, written %d bytes at a time: another fingerprint", chunk)
		}
	}
	if fp("boundary-one-1234", "%PDF-1.4 other bytes", 5) == first {
		t.Error("other bytes must have another fingerprint")
	}
}
