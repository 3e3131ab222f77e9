package tag

import (
	"strings"
	"testing"

	"github.com/doclib/libs/validation"
)

func TestValidID(t *testing.T) {
	for id, want := range map[string]bool{
		"a": true, "A9._-": true, "9lives": true, strings.Repeat("x", 64): true,
		"": false, "-a": false, ".a": false, "_a": false, "a b": false, "é": false,
		strings.Repeat("x", 65): false, "a/b": false,
	} {
		if got := ValidID(id); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestCleanName(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"  Santé  ", "Santé", true},
		{strings.Repeat("é", 100), strings.Repeat("é", 100), true},
		{strings.Repeat("é", 101), "", false},
		{"   ", "", false},
		{"a\nb", "", false},
	}
	for _, tt := range tests {
		var errs validation.Errors
		got := CleanName(&errs, "name", tt.in)
		if ok := len(errs) == 0; ok != tt.ok {
			t.Errorf("CleanName(%q) errors = %v, want ok=%v", tt.in, errs, tt.ok)
		}
		if tt.ok && got != tt.want {
			t.Errorf("CleanName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNameKeyFoldsCaseAndForm(t *testing.T) {
	if NameKey("SANTÉ") != NameKey("santé") || NameKey("Sante\u0301") != NameKey("santé") {
		t.Error("names differing by case or Unicode form must share a key")
	}
	if NameKey("sante") == NameKey("santé") {
		t.Error("accents are significant")
	}
	if NameKey("Straße") != NameKey("STRASSE") {
		t.Error("full case folding expected")
	}
}
