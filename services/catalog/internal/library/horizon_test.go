package library

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/doctest"
	"github.com/doclib/services/catalog/internal/document/mongostore"
)

// oneDocument is a catalog holding one live document.
func oneDocument(t *testing.T) (*mongostore.Store, *doctest.World, *document.Service, document.Document) {
	t.Helper()
	store, w, svc := newCatalog(t, 2)
	d, err := svc.Create(context.Background(), document.Input{Type: "LINK", Title: "T", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	return store, w, svc, d
}

// purgeForGood deletes, purges and sweeps the document id, as the trash
// retention and the relay do: the horizon rises past its deletion.
func purgeForGood(t *testing.T, store *mongostore.Store, svc *document.Service, id string) {
	t.Helper()
	purge(t, store, svc, id)
	if n, err := store.Sweep(context.Background()); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}
}

// purge deletes and purges the document id, and publishes the events (as
// the relay does): the sweep may then remove it.
func purge(t *testing.T, store *mongostore.Store, svc *document.Service, id string) {
	t.Helper()
	ctx := context.Background()
	_, _, err := svc.Delete(ctx, id)
	testkit.Must(t, err, "Delete")
	if n, err := svc.PurgeTrash(ctx, time.Now().Add(time.Hour), 10); err != nil || n != 1 {
		t.Fatalf("PurgeTrash = %d, %v", n, err)
	}
}

// A first sync of more than a page completes once a document deleted
// after the oldest documents were written has been purged for good: its
// cursors are positions among documents written before that deletion, and
// taking them as older than the removals kept made every new client start
// again for ever (410 on its second page).
func TestAFirstSyncOfManyPagesCompletesAfterAPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc := newCatalog(t, 2)
	in := document.Input{Type: "LINK", Title: "T", URL: "https://x.org"}
	for range 3 {
		_, err := svc.Create(ctx, in)
		testkit.Must(t, err, "Create")
	}
	gone, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create")
	purgeForGood(t, store, svc, gone.ID)

	l := replica(t, store, w)
	l.pageSize = 1
	cursor, held := "", 0
	for pages := 0; ; pages++ {
		if pages == 10 {
			t.Fatalf("no end to the first sync of 3 documents in pages of 1 (the last answer: %v)", err)
		}
		var p Page
		if p, err = l.Sync(ctx, cursor, 0); errors.Is(err, ErrCursorExpired) {
			cursor, held = "", 0
			continue
		}
		testkit.Must(t, err, "Sync")
		held += len(p.Documents)
		if cursor = p.Next.String(); !p.HasMore {
			break
		}
	}
	if held != 3 {
		t.Errorf("the first sync ended with %d documents, want 3", held)
	}
}

// A replica that did not look at the store while a document it holds was
// deleted, purged and swept (no read for longer than the retention) does
// not keep it for good when it looks again.
func TestAnIdleReplicaDropsADocumentPurgedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc, d := oneDocument(t)
	idle := replica(t, store, w)
	_, err := idle.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	purgeForGood(t, store, svc, d.ID)
	s, err := idle.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	if _, ok := s.Doc(d.ID); ok || len(s.Listing(false)) != 0 {
		t.Errorf("the replica still serves the document purged while it was idle (listing: %d)", len(s.Listing(false)))
	}
}

// A sweep that stopped after raising the horizon and before moving the
// counter (its MongoDB went away between the two writes, or the process
// was killed) is finished by the next one, which moves the counter too:
// otherwise a replica that looked at the store before kept the old
// horizon until the next write, and refused (400, the client starting its
// first sync again) every cursor of a replica that had read the new one.
func TestASweepResumedAfterRaisingTheHorizonMovesTheCounter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc, d := oneDocument(t)
	_, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "Kept", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	purge(t, store, svc, d.ID)
	stale := replica(t, store, w)
	s, err := stale.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	tomb, ok := s.docs[d.ID]
	if !ok || !tomb.Purged() {
		t.Fatalf("the replica does not hold the purged document's tombstone")
	}
	// The sweep's first write, alone.
	_, err = store.Documents().Database().Collection("meta").UpdateOne(ctx,
		map[string]any{"_id": "horizon"}, map[string]any{"$set": map[string]any{"n": tomb.DeletedSeq}})
	testkit.Must(t, err, "raise the horizon")
	if n, err := store.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v", n, err)
	}

	first, err := replica(t, store, w).Sync(ctx, "", 0)
	testkit.Must(t, err, "a first sync from a replica started after the sweep")
	if _, err := stale.Sync(ctx, first.Next.String(), 0); err != nil {
		t.Errorf("its cursor at a replica that looked at the store before the sweep: %v, want a page", err)
	}
	if s, err := stale.Get(ctx, 0); err != nil || s.docs[d.ID] != nil {
		t.Errorf("that replica still holds the document swept for good (%v)", err)
	}
}

// presentAsked records the ids a replica asks Present about.
type presentAsked struct {
	*mongostore.Store
	asked []string
}

func (p *presentAsked) Present(ctx context.Context, ids []string) ([]string, error) {
	p.asked = append(p.asked, ids...)
	return p.Store.Present(ctx, ids)
}

// Issue 24: a replica holds a draft as removed, but it was never deleted
// (no deletion, DeletedSeq 0): when the horizon rises, only documents
// deleted under it are asked about, never every draft.
func TestARisingHorizonAsksNotAboutDrafts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc, d := oneDocument(t)
	draft, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "Draft", URL: "https://x.org", Status: "draft"})
	testkit.Must(t, err, "Create a draft")
	src := &presentAsked{Store: store}
	l := replica(t, src, w)
	_, err = l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	purgeForGood(t, store, svc, d.ID)
	s, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	if _, ok := s.Doc(d.ID); ok {
		t.Errorf("the replica still serves the document purged for good")
	}
	for _, id := range src.asked {
		if id == draft.ID {
			t.Errorf("the replica asked whether the draft %s, never deleted, is present (asked %v)", id, src.asked)
		}
	}
}
