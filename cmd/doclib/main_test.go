package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
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
