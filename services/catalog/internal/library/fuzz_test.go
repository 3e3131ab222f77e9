package library

import (
	"errors"
	"strings"
	"testing"

	"github.com/doclib/services/catalog/internal/document"
)

// FuzzParseCursor checks the sync cursor's decoding (CONTRACT.md §8: a
// malformed cursor is 400): anything a client sends either is refused as
// ErrBadCursor or decodes to a position within bounds that encodes back to
// a cursor decoding the same.
func FuzzParseCursor(f *testing.F) {
	for _, c := range []Cursor{{}, {Seq: 1}, {Seq: 42, ID: "abc", Categories: 7}, {Seq: 1 << 62, Floor: 1 << 62, ID: strings.Repeat("x", document.MaxRefIDLen), Categories: ^uint64(0)}, {Seq: 9, Floor: 7}} {
		f.Add(c.String())
	}
	for _, s := range []string{"", "not base64!", "AA", "AQ", strings.Repeat("A", 300), "AYCAgICAgICAgIAB", "Af__________________8B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCursor(s)
		if err != nil {
			if !errors.Is(err, ErrBadCursor) {
				t.Fatalf("ParseCursor(%q) = %v, want ErrBadCursor", s, err)
			}
			return
		}
		if c.Seq < 0 || c.Seq > 1<<62 || c.Floor < 0 || c.Floor > 1<<62 || len(c.ID) > document.MaxRefIDLen {
			t.Fatalf("ParseCursor(%q) = %+v: out of bounds", s, c)
		}
		again, err := ParseCursor(c.String())
		if err != nil || again != c {
			t.Fatalf("ParseCursor(%q) = %+v, whose encoding %q decodes to %+v (%v)", s, c, c.String(), again, err)
		}
	})
}
