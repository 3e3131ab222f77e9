package export

import (
	"encoding/json"
	"testing"

	"github.com/doclib/cmd/doclib/internal/library"
)

// TestMarshalKeepsHTMLAsIs: a document's content is written as the catalog
// sent it, not with <, > and & as \u escapes (6 bytes each).
func TestMarshalKeepsHTMLAsIs(t *testing.T) {
	raw, err := marshal(library.Document{Document: json.RawMessage(`{"content":"<p>a & b</p>"}`),
		Revisions: []json.RawMessage{}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"document":{"content":"<p>a & b</p>"},"revisions":[]}`; string(raw) != want {
		t.Errorf("got %s, want %s", raw, want)
	}
}
