package document_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// The reference rule (refs.go), a save and a deletion interleaved both
// ways: never do both succeed.

// once runs f the first time it is called; later calls, f's own
// included, do nothing.
func once(f func()) func() {
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			f()
		}
	}
}

// A media deletion that asks who uses the media between a save's check
// and its commit: the save runs again, sees the deletion and is refused,
// and the deletion saw no user.
func TestAMediaDeletionDuringASavesCheckRefusesTheSave(t *testing.T) {
	w := newWorld()
	svc, _ := newService(t, w)
	ctx := context.Background()
	var users []string
	var askErr error
	w.OnMedias(once(func() {
		w.Media(document.Media{ID: "png", MimeType: "image/png", Deleting: true})
		users, askErr = svc.MediaUsers(ctx, "png")
	}))
	_, err := svc.Create(ctx, newDoc)
	testkit.Must(t, askErr, "MediaUsers")
	if got := document.Failing(t, err); got != "imagesIds[0]" || len(users) != 0 {
		t.Errorf("save failing on %q, deletion saw users %v: want the save refused and no user", got, users)
	}
}

// The other way: a save committed before the deletion asks is seen by it.
func TestASaveCommittedBeforeAMediaDeletionAsksIsAUser(t *testing.T) {
	w := newWorld()
	svc, _ := newService(t, w)
	ctx := context.Background()
	d, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "Create")
	w.Media(document.Media{ID: "png", MimeType: "image/png", Deleting: true})
	users, err := svc.MediaUsers(ctx, "png")
	testkit.Must(t, err, "MediaUsers")
	if !slices.Contains(users, d.ID) {
		t.Errorf("MediaUsers = %v, want %s", users, d.ID)
	}
}

// A tag deleted, and its deletion applied, between a save's check and its
// commit: the save runs again and is refused; nothing names the tag.
func TestATagDeletionDuringASavesCheckRefusesTheSave(t *testing.T) {
	w := newWorld()
	svc, store := newService(t, w)
	ctx := context.Background()
	var applyErr error
	w.OnTags(once(func() {
		w.Untag("b")
		_, applyErr = svc.TagsDeleted(ctx, []string{"b"})
	}))
	_, err := svc.Create(ctx, newDoc)
	testkit.Must(t, applyErr, "TagsDeleted")
	if got := document.Failing(t, err); got != "tagsIds[1]" {
		t.Errorf("save failing on %q, want tagsIds[1]", got)
	}
	if naming, err := store.Naming(ctx, document.Refs{Tags: []string{"b"}}); err != nil || len(naming) > 0 {
		t.Errorf("documents naming the deleted tag: %v, %v", naming, err)
	}
}

// A restore checks its media again; a deletion of one asking between that
// check and the restore's commit makes the restore drop it.
func TestAMediaDeletionDuringARestoreDropsTheMedia(t *testing.T) {
	w := newWorld()
	svc, _ := newService(t, w)
	ctx := context.Background()
	d, err := svc.Create(ctx, newDoc)
	testkit.Must(t, err, "Create")
	_, _, err = svc.Delete(ctx, d.ID)
	testkit.Must(t, err, "Delete")
	var users []string
	var askErr error
	w.OnMedias(once(func() {
		w.Media(document.Media{ID: "png", MimeType: "image/png", Deleting: true})
		users, askErr = svc.MediaUsers(ctx, "png")
	}))
	r, _, err := svc.Restore(ctx, d.ID)
	testkit.Must(t, err, "Restore")
	testkit.Must(t, askErr, "MediaUsers")
	if len(users) != 0 || slices.Contains(r.ImagesIDs, "png") {
		t.Errorf("restored with images %v while the deletion saw users %v: want the media dropped", r.ImagesIDs, users)
	}
}
