package tag

import (
	"strings"
	"testing"
	"time"

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
		// Characters that hide inside a name: format characters and line
		// or paragraph separators; the joiners stay (emoji, Persian).
		{"Café\u200b N", "", false},
		{"Vac\u00adcin", "", false},
		{"Café\u2060N", "", false},
		{"a\u200eb", "", false},
		{"Café\u2028N", "", false},
		{"Café\u2029N", "", false},
		{"👩\u200d💻", "👩\u200d💻", true},
		{"می\u200cخواهم", "می\u200cخواهم", true},
		{"Café  N", "Café  N", true},
		// Scotland's flag: a black flag, then tag characters spelling gbsct.
		{"Rugby \U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F", "Rugby \U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F", true},
		{"a\U000E0067b", "", false}, // a tag character alone hides
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

// Names that look the same are the same name: every one of these was
// accepted beside "Café N".
func TestNameKeyMakesLookAlikesOneName(t *testing.T) {
	for _, name := range []string{"Café N", "Café\u200b N", "Café\u00a0N", "Café  N", "\uff23afé N", "CAFÉ N",
		"Cafe\u0301 N", "Café\tN", "Café\u2028N", "Café\u3000N", " Café N ", "Café\u00ad N"} {
		if NameKey(name) != NameKey("Café N") {
			t.Errorf("NameKey(%q) = %q, want %q as for \"Café N\"", name, NameKey(name), NameKey("Café N"))
		}
	}
	for _, other := range []string{"CaféN", "Cafe N", "Café M", "Café N."} {
		if NameKey(other) == NameKey("Café N") {
			t.Errorf("NameKey(%q) = NameKey(\"Café N\"), want them apart", other)
		}
	}
	if NameKey("\uff36accin") != NameKey("Vaccin") || NameKey("ﬁle") != NameKey("file") {
		t.Error("compatibility forms (full-width letters, ligatures) must share a key with their plain forms")
	}
}

// A backup made before names refused format characters restores: an
// import checks only what every stored name always met.
func TestImportKeepsANameStoredBeforeTheRule(t *testing.T) {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for name, ok := range map[string]bool{"Café\u200b N": true, "Café N": true, " Café N": false, "a\nb": false, "": false} {
		var errs validation.Errors
		checkImported(&errs, name, at, at)
		if (len(errs) == 0) != ok {
			t.Errorf("import of %q: errors %v, want accepted=%v", name, errs, ok)
		}
	}
}
