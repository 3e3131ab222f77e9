package validation

import "testing"

func TestTrimKeepsASubdivisionFlag(t *testing.T) {
	scotland := "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"
	for in, want := range map[string]string{
		" Rugby " + scotland + " \u200b": "Rugby " + scotland,
		"Rugby \U000E0067\U000E007F":     "Rugby",
		"\u200b" + scotland:              scotland,
	} {
		if got := Trim(in); got != want {
			t.Errorf("Trim(%q) = %q, want %q", in, got, want)
		}
	}
}
