package document_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// Issue 21 item 9 with pending changes (issue 24). The pending changes pin p; p is
// deleted; saving the same pending changes again is accepted (it adds no
// pin), and the purge drops the pin from the pending changes too.
func TestAPendingPinDeletedThenPurged(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	link := func(title string, draft bool, pins ...string) document.Input {
		return document.Input{Type: "LINK", Title: title, URL: "https://x.org", RelatedIDs: pins, Draft: draft}
	}
	p, err := svc.Create(ctx, link("pinned", false))
	testkit.Must(t, err, "Create")
	d, err := svc.Create(ctx, link("pinning", false))
	testkit.Must(t, err, "Create")
	_, err = svc.Update(ctx, d.ID, link("pending", true, p.ID))
	testkit.Must(t, err, "Update pending")
	_, _, err = svc.Delete(ctx, p.ID)
	testkit.Must(t, err, "Delete")
	_, err = svc.Update(ctx, d.ID, link("pending 2", true, p.ID))
	if err != nil {
		t.Errorf("re-saving pending changes whose stored pin was deleted: %v", err)
	}
	if n, err := svc.PurgeTrash(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("PurgeTrash = %d, %v", n, err)
	}
	got, _ := store.Get(ctx, d.ID)
	if got.Draft != nil && strings.Contains(strings.Join(got.Draft.RelatedIDs, ","), p.ID) {
		t.Errorf("pending changes still pin the purged document: %v", got.Draft.RelatedIDs)
	}
}

// The purge drops pins as a change of its own: a new version, so a revision
// and an If-Match from before it fails.
func TestAPurgesPinDropKeepsARevision(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	link := func(title string, pins ...string) document.Input {
		return document.Input{Type: "LINK", Title: title, URL: "https://x.org", RelatedIDs: pins}
	}
	p, _ := svc.Create(ctx, link("pinned"))
	d, _ := svc.Create(ctx, link("pinning", p.ID))
	svc.Delete(ctx, p.ID)
	svc.PurgeTrash(ctx, time.Now().Add(time.Hour), 10)
	got, _ := store.Get(ctx, d.ID)
	if len(got.RelatedIDs) != 0 {
		t.Fatalf("pin not dropped")
	}
	if got.Version == d.Version {
		t.Errorf("pin dropped by the purge but version still %d (no revision, If-Match blind)", got.Version)
	}
}
