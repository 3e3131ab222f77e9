package document_test

import (
	"context"
	"testing"
	"time"

	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/testkit"
)

// A request that creates several documents under one Idempotency-Key
// ties the key to its first only (the claim is taken once): the others
// are new documents, not the first one answered again.
func TestAClaimIsTakenByTheFirstCreateOnly(t *testing.T) {
	svc, store := newService(t, newWorld())
	claim := &idempotency.Claim{ID: "k", Fingerprint: "f", ExpiresAt: time.Now().Add(time.Hour)}
	ctx := idempotency.WithClaim(context.Background(), claim)
	first, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "first Create")
	second, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "second Create")
	if first.ID == second.ID {
		t.Errorf("the second create under the request's claim answered the first document %s", first.ID)
	}
	if held, _, _, err := store.Keyed(ctx, "k"); err != nil || held.ID != first.ID {
		t.Errorf("the key is held by %q (%v), want the first document %s", held.ID, err, first.ID)
	}
}
