package mongostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/webhook/internal/delivery"
	dstore "github.com/doclib/services/webhook/internal/delivery/mongostore"
	"github.com/doclib/services/webhook/internal/subscription"
	"github.com/doclib/services/webhook/internal/subscription/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// A subscription and its deliveries go in one transaction: a deletion
// whose cascade fails leaves both, one that succeeds leaves neither.
func TestADeletionTakesTheDeliveriesWithItOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.Mongo(t)
	dl := dstore.New(db, time.Hour)
	testkit.Must(t, dl.EnsureIndexes(ctx), "indexes")
	broken := errors.New("the database went away")
	failing := true
	subs := mongostore.New(db, func(ctx context.Context, id string) error {
		if err := dl.Drop(ctx, id); err != nil {
			return err
		}
		if failing {
			return broken
		}
		return nil
	})
	now := time.Now().UTC()
	testkit.Must(t, subs.Create(ctx, subscription.Subscription{ID: "wh_1", URL: "https://example.org/hook",
		EventTypes: []string{"*"}, Status: subscription.Active, Secret: "s", CreatedAt: now}), "create")
	testkit.Must(t, dl.Enqueue(ctx, []delivery.Delivery{{SubscriptionID: "wh_1", EventID: "e1", Type: "tag.deleted",
		Sequence: 1, Body: []byte(`{}`), Status: delivery.Pending, NextAttemptAt: now, EventTime: now, CreatedAt: now}}), "enqueue")

	if err := subs.Delete(ctx, "wh_1"); !errors.Is(err, broken) {
		t.Fatalf("a deletion whose cascade fails: %v, want its error", err)
	}
	if _, err := subs.Get(ctx, "wh_1"); err != nil {
		t.Errorf("the subscription after a failed deletion: %v, want it kept", err)
	}
	if n, err := dl.Backlog(ctx, "wh_1"); err != nil || n != 1 {
		t.Errorf("its backlog after a failed deletion: %d, %v; want 1 (the drop undone)", n, err)
	}

	failing = false
	testkit.Must(t, subs.Delete(ctx, "wh_1"), "delete")
	if _, err := subs.Get(ctx, "wh_1"); !errors.Is(err, subscription.ErrNotFound) {
		t.Errorf("the subscription after its deletion: %v, want ErrNotFound", err)
	}
	if n, err := dl.Backlog(ctx, "wh_1"); err != nil || n != 0 {
		t.Errorf("its backlog after the deletion: %d, %v; want 0", n, err)
	}
	if err := subs.Delete(ctx, "wh_1"); !errors.Is(err, subscription.ErrNotFound) {
		t.Errorf("a second deletion: %v, want ErrNotFound", err)
	}
}
