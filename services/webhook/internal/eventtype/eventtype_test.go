package eventtype

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"document.deleted", "document.deleted", true},
		{"document.*", "document.deleted", true},
		{"document.*", "document.purged", true},
		{"document.*", "documents.deleted", false},
		{"doc*", "document.deleted", false}, // a prefix ends at a dot
		{"*", "media.deleted", true},
		{"tag.deleted", "category.deleted", false},
	}
	for _, c := range cases {
		if got := Match(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestValidPattern(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"document.*", "tag.deleted", "*", "media.*", "tag.*", "category.*", "config.changed", "document.created", "media.uploaded"} {
		if !ValidPattern(p) {
			t.Errorf("%q should be valid", p)
		}
	}
	for _, p := range []string{"", "document", "nope.*", "document.creat", "webhook.ping"} {
		if ValidPattern(p) {
			t.Errorf("%q should be refused", p)
		}
	}
}

func TestEverySubjectIsALibrarySubject(t *testing.T) {
	t.Parallel()
	for _, s := range Subjects() {
		name, ok := FromSubject(s)
		if !ok || !strings.HasPrefix(s, "library.") || name == "" {
			t.Errorf("subject %q maps to %q", s, name)
		}
	}
}
