package library

import (
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/doclib/services/catalog/internal/document"
)

// A document replaced by a newer version is freed, whatever else was read
// with it: a replica's memory follows the library, not its history.
func TestReplacedDocumentsAreFreed(t *testing.T) {
	changes := []document.Document{
		{ID: "a", Seq: 1, Content: strings.Repeat("a", 1<<20)},
		{ID: "b", Seq: 1, Content: strings.Repeat("b", 1<<20)},
	}
	old := weak.Make(unsafe.StringData(changes[0].Content))
	s := newSnapshot(nil, 0, 0, 0, nil).with(changes, 1, 1, 0, nil)
	changes = nil
	s = s.with([]document.Document{{ID: "a", Seq: 2, Content: "new"}}, 2, 2, 0, nil)
	runtime.GC()
	if old.Value() != nil {
		t.Error("the replaced version of a is still held (with b, read in the same refresh, which is still current)")
	}
	runtime.KeepAlive(s)
}
