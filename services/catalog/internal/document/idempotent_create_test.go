package document_test

import (
	"context"
	"errors"
	"testing"

	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// Issue 21 item 14: a create retried with the same Idempotency-Key after
// the key was let go (its first answer was "outcome unknown", or the key's
// 30 s lease lapsed: the middleware then runs the retry as a first
// attempt) finds the document its first attempt made instead of making a
// second one; another caller's same key makes its own.
func TestALateRetryOfACreateWithItsKeyMakesNoDuplicate(t *testing.T) {
	svc, store := newService(t, newWorld())
	ed := identity.With(context.Background(), identity.Caller{Name: "ed", Role: identity.Editor})
	ctx := idempotency.WithKey(ed, idempotency.ScopedID("ed", "create-1"))
	in := document.Input{Type: "LINK", Title: "Once", URL: "https://x.org"}
	first, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create")
	again, err := svc.Create(ctx, in)
	if err != nil || again.ID != first.ID || again.Version != first.Version {
		t.Errorf("the late retry: %+v, %v; want the first attempt's document %s again", again, err, first.ID)
	}
	if all, _ := store.Changes(ctx, 0, "", 10); len(all) != 1 {
		t.Errorf("%d documents after the retry, want 1", len(all))
	}
	other := identity.With(context.Background(), identity.Caller{Name: "jo", Role: identity.Editor})
	theirs, err := svc.Create(idempotency.WithKey(other, idempotency.ScopedID("jo", "create-1")), in)
	if err != nil || theirs.ID == first.ID {
		t.Errorf("another caller's create with the same key: %s, %v; want a document of its own", theirs.ID, err)
	}
	_, _, err = svc.Delete(ed, first.ID)
	testkit.Must(t, err, "Delete")
	if _, err := svc.Create(ctx, in); !errors.Is(err, document.ErrDeleted) {
		t.Errorf("a late retry once its document was deleted: %v, want ErrDeleted (409), not a new document", err)
	}
}
