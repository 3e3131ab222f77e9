package validation

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules every free-text field shares (titles, tag and category names,
// sources): what trimming removes, and which characters are refused because
// they hide or reorder text. "evil\u202Egpj.html" reads as "evilhtml.jpg".

// Trim removes white space and invisible characters (Unicode
// default-ignorable code points such as U+200B ZERO WIDTH SPACE or U+FEFF)
// from both ends of s, so a value made only of them is empty. Inside the
// text they stay: a zero-width joiner builds emoji and some scripts.
//
// A subdivision flag's tag characters at the end stay: the flag of
// Scotland is a black flag followed by invisible tag characters.
func Trim(s string) string {
	s = strings.TrimLeftFunc(s, blank)
	for s != "" {
		r, n := utf8.DecodeLastRuneInString(s)
		if !blank(r) || (IsTagChar(r) && endsInFlag(strings.TrimRightFunc(s, IsTagChar))) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func blank(r rune) bool { return unicode.IsSpace(r) || IsInvisible(r) }

// BlackFlag is U+1F3F4, which tag characters follow in a subdivision flag.
const BlackFlag = '\U0001F3F4'

// IsTagChar says whether r is one of the tag characters that spell a
// subdivision flag's code (U+E0020..U+E007F, CANCEL TAG ending it).
func IsTagChar(r rune) bool { return r >= 0xE0020 && r <= 0xE007F }

func endsInFlag(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return r == BlackFlag
}

// IsInvisible reports a default-ignorable code point (Unicode's
// Default_Ignorable_Code_Point, approximated by the categories Go has:
// format characters, variation selectors and the other ignorables such as
// the Hangul fillers).
func IsInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r)
}

// IsBidiOverride reports the bidirectional embeddings, overrides and
// isolates (U+202A–U+202E, U+2066–U+2069): the characters that make text
// display in another order than it is stored (CVE-2021-42574).
func IsBidiOverride(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

// IsBidiControl reports IsBidiOverride and the directional marks (U+200E,
// U+200F, U+061C). Marks are legitimate in right-to-left text, so text
// fields keep them; file names drop them with the rest.
func IsBidiControl(r rune) bool {
	return IsBidiOverride(r) || r == 0x200E || r == 0x200F || r == 0x061C
}

// UnsafeText returns why s cannot be stored as a text field, or "": it
// holds a control character (C0, DEL or C1; tabs and line breaks included)
// or a bidirectional override.
func UnsafeText(s string) string {
	for i, r := range s {
		switch {
		case unicode.IsControl(r):
			return fmt.Sprintf("must not contain control characters (U+%04X at byte %d)", r, i)
		case IsBidiOverride(r):
			return fmt.Sprintf("must not contain bidirectional overrides (U+%04X at byte %d)", r, i)
		}
	}
	return ""
}

// StripUnsafe removes control characters and every bidirectional control,
// marks included, from s: for names that reach a file system or a
// Content-Disposition header, where nothing may reorder the extension.
func StripUnsafe(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || IsBidiControl(r) {
			return -1
		}
		return r
	}, s)
}
