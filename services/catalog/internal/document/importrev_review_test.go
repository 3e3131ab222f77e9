package document_test

import (
	"context"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// An import accepts revisions of any version before their document, and
// the document at a lower version (PUT …/entry checks neither against
// the other). The document's next write takes the next version, whose
// revision is now inserted in the write's transaction with no tolerance
// for one already there (PutRevisions leaves such a one as it is): the
// write fails, and so does every later one, for good.
func TestAnImportedRevisionAboveTheDocumentsVersionDoesNotBlockItsWrites(t *testing.T) {
	svc, _ := newService(t, newWorld())
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	d := document.Document{ID: "imported-1", Type: document.Link, Title: "T", URL: "https://x.org",
		CreatedAt: at, UpdatedAt: at, Version: 1, Status: document.Published, PublishedAt: at}
	later := d
	later.Version, later.Title = 2, "T2"
	testkit.Must(t, svc.ImportRevision(ctx, document.Revision{DocumentID: d.ID, Version: 2,
		Change: document.Change{By: "ann", At: at, Why: document.WhyUpdate}, Doc: later}), "ImportRevision 2")
	_, created, _, err := svc.Import(ctx, d)
	testkit.Must(t, err, "Import the document at version 1")
	if !created {
		t.Fatal("not created")
	}
	if _, err := svc.Update(ctx, d.ID, document.Input{Type: "LINK", Title: "edited", URL: "https://x.org"}); err != nil {
		t.Errorf("the first edit after the import: %v; want it stored (the import should have refused the revision, or the write tolerate it)", err)
	}
}
