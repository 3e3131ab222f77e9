package bucket

import (
	"errors"
	"slices"
	"strings"
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

// TestPruneSkipsAHeldArchive (review final-data, finding 4): an archive
// that cannot be removed (legal hold) does not stop the others from
// going; every failure is reported; the newest keep stay besides it.
func TestPruneSkipsAHeldArchive(t *testing.T) {
	t.Parallel()
	names := []string{"doclib-1", "doclib-2", "doclib-3", "doclib-4", "doclib-5"}
	held := map[string]bool{"doclib-1": true, "doclib-3": true}
	var tried []string
	removed, err := removeOldest(names, 2, func(n string) error {
		tried = append(tried, n)
		if held[n] {
			return errors.New("object is under legal hold")
		}
		return nil
	})
	if strings.Join(removed, ",") != "doclib-2" || strings.Join(tried, ",") != "doclib-1,doclib-2,doclib-3" {
		t.Errorf("removed %v, tried %v; want doclib-2 removed, the three oldest tried", removed, tried)
	}
	if err == nil || !strings.Contains(err.Error(), "doclib-1:") || !strings.Contains(err.Error(), "doclib-3:") {
		t.Errorf("error %v; want both held archives named", err)
	}
}
