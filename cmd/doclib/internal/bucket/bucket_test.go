package bucket

import (
	"slices"
	"testing"
	"time"
)

// A hand-made object under the prefix sorts after the timestamps: it must
// not count as an archive, or Keep=1 would delete the one just written.
func TestArchivesOnlyCountsExporterNames(t *testing.T) {
	s := &Store{cfg: Config{Prefix: "backups/"}}
	fresh := s.Name(time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC), true)
	older := s.Name(time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC), false)
	keys := []string{
		"backups/doclib-pre-upgrade.tar",
		fresh,
		"backups/doclib-20261125T030000Z.tar.zst.bak",
		"backups/sub/doclib-20261124T030000Z.tar",
		older,
		"other/doclib-20261120T030000Z.tar",
	}
	got := Archives("backups/", keys)
	want := []string{older, fresh}
	if !slices.Equal(got, want) {
		t.Fatalf("Archives = %v, want %v", got, want)
	}
}
