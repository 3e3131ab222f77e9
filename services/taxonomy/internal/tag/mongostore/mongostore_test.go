package mongostore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/taxonomy/internal/tag"
	"github.com/doclib/services/taxonomy/internal/tag/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func newStore(t *testing.T) (*mongostore.Store, context.Context) {
	t.Helper()
	t.Parallel()
	db := testkit.Mongo(t)
	box := outbox.New(db, testkit.Logger(t))
	s := mongostore.New(db, box, testkit.Logger(t))
	ctx := context.Background()
	testkit.Must(t, box.EnsureIndexes(ctx), "outbox indexes")
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes")
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes again")
	return s, ctx
}

var at = time.Date(2026, 11, 22, 10, 15, 30, 123e6, time.UTC)

func cat(id, name string) tag.Category {
	return tag.Category{ID: id, Name: name, CreatedAt: at, UpdatedAt: at}
}
func tg(id, name, cat string) tag.Tag {
	return tag.Tag{ID: id, Name: name, CategoryID: cat, CreatedAt: at, UpdatedAt: at}
}

func TestCategoriesInCreationOrderWithTheirTags(t *testing.T) {
	s, ctx := newStore(t)
	for _, id := range []string{"zeta", "alpha", "mid"} {
		testkit.Must(t, s.InsertCategory(ctx, cat(id, "name "+id)), "insert")
	}
	testkit.Must(t, s.InsertTag(ctx, tg("t2", "B", "alpha")), "insert tag")
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "alpha")), "insert tag")
	got, err := s.Categories(ctx)
	testkit.Must(t, err, "Categories")
	if len(got) != 3 || got[0].ID != "zeta" || got[1].ID != "alpha" || got[2].ID != "mid" {
		t.Fatalf("order = %v, want zeta, alpha, mid", got)
	}
	if tags := got[1].Tags; len(tags) != 2 || tags[0].ID != "t2" || tags[1].ID != "t1" {
		t.Errorf("alpha tags = %v, want t2, t1", tags)
	}
	if got[0].Tags == nil || len(got[0].Tags) != 0 {
		t.Errorf("a category without tags has Tags = %#v, want empty non-nil", got[0].Tags)
	}
	if !got[1].CreatedAt.Equal(at) {
		t.Errorf("createdAt = %v, want %v", got[1].CreatedAt, at)
	}
}

func TestDuplicates(t *testing.T) {
	s, ctx := newStore(t)
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "Santé")), "insert")
	testkit.Must(t, s.InsertCategory(ctx, cat("c2", "Other")), "insert")
	if err := s.InsertCategory(ctx, cat("c1", "Else")); !errors.Is(err, tag.ErrDuplicateID) {
		t.Errorf("same id: err = %v, want ErrDuplicateID", err)
	}
	if err := s.InsertCategory(ctx, cat("c3", "SANTÉ")); !errors.Is(err, tag.ErrDuplicateName) {
		t.Errorf("same name other case: err = %v, want ErrDuplicateName", err)
	}
	if _, err := s.RenameCategory(ctx, "c2", "santé", at, nil); !errors.Is(err, tag.ErrDuplicateName) {
		t.Errorf("rename onto taken name: err = %v, want ErrDuplicateName", err)
	}
	if c, err := s.RenameCategory(ctx, "c1", "SANTÉ", at.Add(time.Second), nil); err != nil || c.Name != "SANTÉ" {
		t.Errorf("rename to own name in another case = %v, %v", c, err)
	}
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "Vaccins", "c1")), "insert tag")
	if err := s.InsertTag(ctx, tg("t2", "vaccins", "c1")); !errors.Is(err, tag.ErrDuplicateName) {
		t.Errorf("tag name taken in category: err = %v, want ErrDuplicateName", err)
	}
	testkit.Must(t, s.InsertTag(ctx, tg("t2", "vaccins", "c2")), "same tag name in another category")
	if err := s.InsertTag(ctx, tg("t1", "x", "c2")); !errors.Is(err, tag.ErrDuplicateID) {
		t.Errorf("tag id taken: err = %v, want ErrDuplicateID", err)
	}
	if err := s.InsertTag(ctx, tg("t9", "x", "nope")); !errors.Is(err, tag.ErrCategoryNotFound) {
		t.Errorf("unknown category: err = %v, want ErrCategoryNotFound", err)
	}
}

func TestDeleteCategoryDeletesItsTagsAndRecordsEvents(t *testing.T) {
	s, ctx := newStore(t)
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One")), "insert")
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "c1")), "insert tag")
	testkit.Must(t, s.InsertTag(ctx, tg("t2", "B", "c1")), "insert tag")
	testkit.Must(t, s.DeleteCategory(ctx, "c1", at), "delete")

	if err := s.DeleteCategory(ctx, "c1", at); !errors.Is(err, tag.ErrCategoryNotFound) {
		t.Errorf("second delete: err = %v, want ErrCategoryNotFound", err)
	}
	if got, _ := s.Categories(ctx); len(got) != 0 {
		t.Errorf("categories after delete = %v", got)
	}
	if got, _ := s.Tags(ctx, []string{"t1", "t2"}); len(got) != 0 {
		t.Errorf("tags after delete = %v", got)
	}
	if n := mongostore.OutboxLen(t, s); n != 6 {
		t.Errorf("events recorded = %d, want 6 (three creations; the category's deletion and its two tags')", n)
	}

	// Ids and names are free again at once, and the old tags do not come back.
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One")), "re-create category")
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "c1")), "re-create tag")
	got, _ := s.Category(ctx, "c1")
	if len(got.Tags) != 1 {
		t.Errorf("re-created category tags = %v, want only the new t1", got.Tags)
	}
}

func TestRenameAndDeleteTag(t *testing.T) {
	s, ctx := newStore(t)
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One")), "insert")
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "c1")), "insert tag")
	later := at.Add(time.Minute)
	got, err := s.RenameTag(ctx, "t1", "Renamed", later, nil)
	testkit.Must(t, err, "rename")
	if got.Name != "Renamed" || !got.UpdatedAt.Equal(later) || !got.CreatedAt.Equal(at) {
		t.Errorf("renamed tag = %+v", got)
	}
	if _, err := s.RenameTag(ctx, "nope", "x", later, nil); !errors.Is(err, tag.ErrTagNotFound) {
		t.Errorf("rename unknown: err = %v", err)
	}
	testkit.Must(t, s.DeleteTag(ctx, "t1", later), "delete tag")
	if err := s.DeleteTag(ctx, "t1", later); !errors.Is(err, tag.ErrTagNotFound) {
		t.Errorf("delete twice: err = %v, want ErrTagNotFound", err)
	}
}

// Name keys stored under the former rule (NFC and case folding only) are
// brought up to the current one at start-up, so a new look-alike is
// refused; of two stored names that now look the same, the second keeps
// its old key (both stay, nothing is merged).
func TestRekeyNamesBringsStoredKeysUpToDate(t *testing.T) {
	s, ctx := newStore(t)
	for _, id := range []string{"c1", "c2", "c3"} {
		testkit.Must(t, s.InsertCategory(ctx, cat(id, id)), "insert")
	}
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "t1", "c1")), "insert tag")
	cats, tags := mongostore.Collections(s)
	// name and former key of each record
	for coll, stored := range map[*mongo.Collection]map[string][2]string{
		cats: {"c1": {"Café  N", "café  n"}, "c2": {"Ｃafé M", "ｃafé m"}, "c3": {"Café M", "café m"}},
		tags: {"t1": {"Vac\u00adcin", "vac\u00adcin"}},
	} {
		for id, v := range stored {
			_, err := coll.UpdateOne(ctx, bson.M{"id": id}, bson.M{"$set": bson.M{"name": v[0], "nameKey": v[1]}})
			testkit.Must(t, err, "store the name under its former key")
		}
	}
	testkit.Must(t, s.RekeyNames(ctx, testkit.Logger(t)), "RekeyNames")
	testkit.Must(t, s.RekeyNames(ctx, testkit.Logger(t)), "RekeyNames again")
	if err := s.InsertCategory(ctx, cat("c4", "Café N")); !errors.Is(err, tag.ErrDuplicateName) {
		t.Errorf("Café N beside a stored 'Café  N': %v, want ErrDuplicateName", err)
	}
	if err := s.InsertTag(ctx, tg("t2", "Vaccin", "c1")); !errors.Is(err, tag.ErrDuplicateName) {
		t.Errorf("Vaccin beside a stored 'Vac\\u00adcin': %v, want ErrDuplicateName", err)
	}
	got, err := s.Categories(ctx)
	testkit.Must(t, err, "Categories")
	if len(got) != 3 {
		t.Errorf("categories %v, want the three stored, none merged", got)
	}
}

// Every change records its event in its transaction: the ids, the new
// name, the caller's identity and the change's time; a change refused
// records nothing.
func TestEveryChangeRecordsItsEvent(t *testing.T) {
	s, _ := newStore(t)
	ctx := identity.With(context.Background(), identity.Caller{Name: "alice", Role: identity.Editor})
	later := at.Add(time.Minute)
	testkit.Must(t, s.InsertCategory(ctx, cat("c1", "One")), "insert")
	testkit.Must(t, s.InsertTag(ctx, tg("t1", "A", "c1")), "insert tag")
	_, err := s.RenameTag(ctx, "t1", "B", later, nil)
	testkit.Must(t, err, "rename tag")
	_, err = s.RenameCategory(ctx, "c1", "Two", later, nil)
	testkit.Must(t, err, "rename category")
	if err := s.InsertTag(ctx, tg("t2", "b", "c1")); !errors.Is(err, tag.ErrDuplicateName) {
		t.Fatalf("duplicate tag: err = %v", err)
	}
	testkit.Must(t, s.DeleteTag(ctx, "t1", later), "delete tag")
	testkit.Must(t, s.DeleteCategory(ctx, "c1", later), "delete category")

	want := []struct {
		subject, data string
		at            time.Time
	}{
		{events.CategoryCreated, `{"categoryId":"c1","name":"One","actor":"alice"}`, at},
		{events.TagCreated, `{"tagId":"t1","categoryId":"c1","name":"A","actor":"alice"}`, at},
		{events.TagRenamed, `{"tagId":"t1","categoryId":"c1","name":"B","actor":"alice"}`, later},
		{events.CategoryRenamed, `{"categoryId":"c1","name":"Two","actor":"alice"}`, later},
		{events.TagDeleted, `{"tagId":"t1","categoryId":"c1","actor":"alice"}`, later},
		{events.CategoryDeleted, `{"categoryId":"c1","tagsIds":[],"actor":"alice"}`, later},
	}
	got := mongostore.Pending(t, s)
	if len(got) != len(want) {
		t.Fatalf("recorded %d events, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].Type != w.subject || string(got[i].Data) != w.data || !got[i].Time.Equal(w.at) || got[i].Source != mongostore.Source {
			t.Errorf("event %d = %s %s at %v from %s, want %s %s at %v", i, got[i].Type, got[i].Data, got[i].Time,
				got[i].Source, w.subject, w.data, w.at)
		}
	}
}
