package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/doclib/cmd/doclib/internal/bucket"
	"github.com/doclib/cmd/doclib/internal/restore"
)

// TestAnExportThatFailsLeavesNoArchive: the archive appears under its name
// only once complete; a failed export removes its .partial. (A killed one
// leaves its .partial, which has no manifest: verify and import refuse it.)
func TestAnExportThatFailsLeavesNoArchive(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "lib.tar")
	err := writeAtomically(name, func(w io.Writer) error {
		_, _ = w.Write([]byte("half an archive"))
		return errors.New("the gateway went away")
	})
	if err == nil {
		t.Fatal("want the export's error")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Fatalf("a failed export left %v", entries)
	}
	if err := writeAtomically(name, func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); err != nil {
		t.Fatalf("a complete export is not under its name: %v", err)
	}
}

// TestImportStoppedSaysWhatToDo (review finding 9): "run it again to
// finish" only for a failure a new run gets past.
func TestImportStoppedSaysWhatToDo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err       error
		want, not string
	}{
		{errors.New("entry media/m1: 503"), "run it again to finish", ""},
		{fmt.Errorf("entry media/m1: %w", restore.ErrTooLarge), "until the installation takes it", "run it again to finish"},
		{fmt.Errorf("entry tags.jsonl: %w", restore.ErrConflict), "-merge", "run it again to finish"},
	} {
		got := importStopped(c.err).Error()
		if !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
			t.Errorf("%v: %q; want it to say %q", c.err, got, c.want)
		}
	}
}

type failingPrune struct{}

func (failingPrune) Prune(context.Context) ([]string, error) {
	return []string{"backups/doclib-20200101T000000Z.tar"}, errors.New("object is WORM protected")
}

// TestAFailedPruneIsAWarning (review finding 8): the archive is written;
// older archives that cannot be removed are a warning, not a failed run
// (the CronJob would run again and write one more archive).
func TestAFailedPruneIsAWarning(t *testing.T) {
	t.Parallel()
	var out, logs strings.Builder
	prune(context.Background(), failingPrune{}, bucket.Config{Bucket: "b", Keep: 2}, &out, slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(out.String(), "removed s3://b/backups/doclib-20200101T000000Z.tar") ||
		!strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "WORM") {
		t.Errorf("a prune that failed after one removal: output %q, log %q; want the removal and a warning", out.String(), logs.String())
	}
}
