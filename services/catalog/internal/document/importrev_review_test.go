package document_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// A document imported below a revision imported for it is refused (its
// next write would take that revision's version): nothing is stored, and
// the same document at its latest version imports.
func TestAnImportedRevisionAboveTheDocumentsVersionDoesNotBlockItsWrites(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	d := document.Document{ID: "imported-1", Type: document.Link, Title: "T", URL: "https://x.org",
		CreatedAt: at, UpdatedAt: at, Version: 1, Status: document.Published, PublishedAt: at}
	later := d
	later.Version, later.Title = 2, "T2"
	testkit.Must(t, svc.ImportRevision(ctx, document.Revision{DocumentID: d.ID, Version: 2,
		Change: document.Change{By: "ann", At: at, Why: document.WhyUpdate}, Doc: later}), "ImportRevision 2")
	if _, _, _, err := svc.Import(ctx, d); document.Failing(t, err) != "version" {
		t.Fatalf("import below an imported revision: %v, want refused on version", err)
	}
	if _, err := store.Get(ctx, d.ID); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("refused import left %v", err)
	}
	_, created, _, err := svc.Import(ctx, later)
	testkit.Must(t, err, "Import at version 2")
	if !created {
		t.Fatal("not created")
	}
	if _, err := svc.Update(ctx, d.ID, document.Input{Type: "LINK", Title: "edited", URL: "https://x.org"}); err != nil {
		t.Errorf("the first edit after the import: %v", err)
	}
}
