package document_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// racingRefs answers the reference check before a write from before, and
// every later lookup (after the write) from after: what taxonomy and media
// say when a deletion lands between the check and the write. err, when
// set, fails the later lookups.
type racingRefs struct {
	mu            sync.Mutex
	calls         int
	before, after refsState
	err           error
}

type refsState struct {
	tags      []string
	createdAt map[string]time.Time // zero when absent
	medias    map[string]document.Media
}

func (r *racingRefs) state() (refsState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if r.calls <= 2 { // the check asks for tags, then media
		return r.before, nil
	}
	return r.after, r.err
}

func (r *racingRefs) Tags(_ context.Context, ids []string) (map[string]time.Time, error) {
	st, err := r.state()
	out := map[string]time.Time{}
	for _, id := range ids {
		if slices.Contains(st.tags, id) {
			out[id] = st.createdAt[id]
		}
	}
	return out, err
}

func (r *racingRefs) Medias(_ context.Context, ids []string) (map[string]document.Media, error) {
	st, err := r.state()
	out := map[string]document.Media{}
	for _, id := range ids {
		if m, ok := st.medias[id]; ok {
			out[id] = m
		}
	}
	return out, err
}

var (
	img = document.Media{ID: "img", Name: "i.png", MimeType: "image/png"}
	old = document.Media{ID: "old", Name: "o.png", MimeType: "image/png"}
)

func newService(t *testing.T, refs document.References) (*document.Service, *mongostore.Store) {
	t.Helper()
	t.Parallel()
	store := mongostore.New(testkit.Mongo(t), slog.New(slog.DiscardHandler))
	testkit.Must(t, store.EnsureIndexes(context.Background()), "EnsureIndexes")
	return document.NewService(store, refs, testkit.Logger(t)), store
}

var in = document.Input{Type: "MARKDOWN", Title: "T", Content: "x", TagsIDs: []string{"kept", "gone", "anew"}, ImagesIDs: []string{"img", "old", "leaving"}}

// A tag and a media deleted between the check and the write leave the
// document at once, and so does a tag deleted and created anew (it is not
// the tag the check saw); a media whose deletion is under way stays (its
// deletion may yet stop, or its event drops it).
func TestCreateDropsReferencesDeletedDuringTheWrite(t *testing.T) {
	refs := &racingRefs{
		before: refsState{tags: []string{"kept", "gone", "anew"}, medias: map[string]document.Media{"img": img, "old": old, "leaving": {ID: "leaving", MimeType: "image/png"}}},
		after: refsState{tags: []string{"kept", "anew"}, createdAt: map[string]time.Time{"anew": time.Now().Add(time.Minute)},
			medias: map[string]document.Media{"img": img, "leaving": {ID: "leaving", MimeType: "image/png", Deleting: true}}},
	}
	svc, store := newService(t, refs)
	ctx := context.Background()
	d, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create")
	stored, _ := store.Get(ctx, d.ID)
	for _, got := range []document.Document{d, stored} {
		if strings.Join(got.TagsIDs, ",") != "kept" || strings.Join(got.ImagesIDs, ",") != "img,leaving" {
			t.Errorf("document %v %v, want tags [kept] and images [img leaving]", got.TagsIDs, got.ImagesIDs)
		}
	}
	if u, _ := store.Unsettled(ctx, time.Now().Add(time.Hour), 10); len(u) != 0 {
		t.Errorf("still unsettled after the write: %v", u)
	}
}

// downAfterTheWrite: "gone" and "old" are deleted during the write, and
// the lookups after it fail until err is cleared.
func downAfterTheWrite() *racingRefs {
	return &racingRefs{
		before: refsState{tags: []string{"kept", "gone", "anew"}, medias: map[string]document.Media{"img": img, "old": old, "leaving": img}},
		after:  refsState{tags: []string{"kept", "anew"}, medias: map[string]document.Media{"img": img, "leaving": img}},
		err:    &document.UnavailableError{Service: "taxonomy", Err: errors.New("down")},
	}
}

// When the lookup after the write fails, the write still succeeds; the
// document stays marked and the background pass settles it later.
func TestUnsettledDocumentsAreSettledLater(t *testing.T) {
	refs := downAfterTheWrite()
	svc, store := newService(t, refs)
	ctx := context.Background()
	d, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create")
	if strings.Join(d.TagsIDs, ",") != "kept,gone,anew" {
		t.Errorf("created %v, want the tags as checked", d.TagsIDs)
	}
	if n, err := svc.SettleUnsettled(ctx, 0); err == nil || n != 0 {
		t.Errorf("SettleUnsettled with taxonomy down = %d, %v; want an error", n, err)
	}
	refs.mu.Lock()
	refs.err = nil
	refs.mu.Unlock()
	if n, err := svc.SettleUnsettled(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("SettleUnsettled of marks older than an hour = %d, %v; want none", n, err)
	}
	if n, err := svc.SettleUnsettled(ctx, 0); err != nil || n != 1 {
		t.Fatalf("SettleUnsettled = %d, %v; want 1", n, err)
	}
	got, _ := store.Get(ctx, d.ID)
	if strings.Join(got.TagsIDs, ",") != "kept,anew" || strings.Join(got.ImagesIDs, ",") != "img,leaving" {
		t.Errorf("settled later: %v %v, want [kept anew] (anew's creation time unknown) and [img leaving]", got.TagsIDs, got.ImagesIDs)
	}
	if n, _ := svc.SettleUnsettled(ctx, 0); n != 0 {
		t.Errorf("settled again: %d", n)
	}
}

// A media being deleted cannot be named by a new reference.
func TestMediaBeingDeletedIsRefused(t *testing.T) {
	deleting := img
	deleting.Deleting = true
	svc, _ := newService(t, &racingRefs{before: refsState{medias: map[string]document.Media{"img": deleting}}})
	_, err := svc.Create(context.Background(), document.Input{Type: "MARKDOWN", Title: "T", Content: "x", ImagesIDs: []string{"img"}})
	if err == nil || !strings.Contains(err.Error(), "being deleted") {
		t.Errorf("Create naming a media being deleted = %v, want a validation error", err)
	}
}

// Taxonomy's clock may be ahead of the catalog's: a tag created just
// before the write, "after" it by the catalog's clock, is still the tag
// the check saw and stays.
func TestATagCreatedJustBeforeTheWriteStays(t *testing.T) {
	ahead := map[string]time.Time{"fresh": time.Now().Add(50 * time.Millisecond).UTC().Truncate(time.Millisecond)}
	refs := &racingRefs{
		before: refsState{tags: []string{"fresh"}, createdAt: ahead},
		after:  refsState{tags: []string{"fresh"}, createdAt: ahead},
	}
	svc, store := newService(t, refs)
	ctx := context.Background()
	d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "T", URL: "https://x.org", TagsIDs: []string{"fresh"}})
	testkit.Must(t, err, "Create")
	stored, _ := store.Get(ctx, d.ID)
	if strings.Join(d.TagsIDs, ",") != "fresh" || strings.Join(stored.TagsIDs, ",") != "fresh" {
		t.Errorf("answered %v, stored %v; want the fresh tag kept", d.TagsIDs, stored.TagsIDs)
	}
	// And a later settle (a restore) keeps it too.
	_, err = svc.Delete(ctx, d.ID)
	testkit.Must(t, err, "Delete")
	r, err := svc.Restore(ctx, d.ID)
	testkit.Must(t, err, "Restore")
	if strings.Join(r.TagsIDs, ",") != "fresh" {
		t.Errorf("restored %v, want the fresh tag kept", r.TagsIDs)
	}
}

// A mark whose document does not exist (a restore of an unknown id) does
// not hold up the others.
func TestAnOrphanMarkDoesNotBlockTheOthers(t *testing.T) {
	refs := downAfterTheWrite()
	svc, store := newService(t, refs)
	ctx := context.Background()
	if _, err := svc.Restore(ctx, "no-such-document"); !errors.Is(err, document.ErrNotFound) {
		t.Fatalf("Restore of an unknown id = %v, want ErrNotFound", err)
	}
	d, err := svc.Create(ctx, in)
	testkit.Must(t, err, "Create")
	refs.mu.Lock()
	refs.err = nil
	refs.mu.Unlock()
	if n, err := svc.SettleUnsettled(ctx, 0); err != nil || n != 1 {
		t.Errorf("SettleUnsettled = %d, %v; want the document settled past the orphan mark", n, err)
	}
	if got, _ := store.Get(ctx, d.ID); slices.Contains(got.TagsIDs, "gone") {
		t.Errorf("tags %v still hold the deleted tag", got.TagsIDs)
	}
}
