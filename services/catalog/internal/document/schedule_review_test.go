package document_test

import (
	"context"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

// Documents in the trash keep their schedule (for a restore) and are never
// applied; they must not take the places of due live documents in a run's
// batch. Every replica runs RunSchedule with a limit (100 in main): as
// many deleted documents with a schedule past due as the limit and no
// scheduled publication is ever applied again.
func TestDeletedScheduledDocumentsDoNotStarveTheSchedule(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	in := link("trashed")
	in.Status, in.PublishAt = "draft", time.Now().Add(time.Hour).Format(time.RFC3339Nano)
	trashed, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create the trashed one")
	_, _, err = svc.Delete(ctx, trashed.ID)
	testkit.Must(t, err, "Delete")
	in = link("live")
	in.Status, in.PublishAt = "draft", time.Now().Add(90*time.Minute).Format(time.RFC3339Nano)
	live, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create the live one")

	at := time.Now().Add(2 * time.Hour) // both due
	for range 3 {
		if _, err := svc.RunSchedule(ctx, at, 1); err != nil {
			t.Fatalf("RunSchedule: %v", err)
		}
	}
	got, _ := store.Get(ctx, live.ID)
	if got.State() != "published" {
		t.Errorf("the live document due for an hour is %s after three runs (limit 1): the deleted one took every batch", got.State())
	}
}
