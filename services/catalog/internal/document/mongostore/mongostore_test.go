package mongostore_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
	"github.com/doclib/services/catalog/internal/document/storetest"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func newStore(t *testing.T) *mongostore.Store {
	t.Helper()
	s := mongostore.New(testkit.Mongo(t), slog.New(slog.DiscardHandler))
	ctx := context.Background()
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes")
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes twice")
	return s
}

// TestContract runs the store contract on the test database, or on a real
// MongoDB with TEST_MONGODB_URI set.
func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Store { return newStore(t) })
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func link(d *document.Document) error {
	d.Title, d.Type, d.URL, d.TagsIDs, d.CreatedAt, d.UpdatedAt = "L", document.Link, "https://x.org", []string{}, t0, t0
	return nil
}

// A deletion records its event in the same transaction, once.
func TestDeletionRecordsItsEvent(t *testing.T) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	_, err := s.Create(ctx, "a", document.Refs{}, link)
	testkit.Must(t, err, "Create")
	del := func(d *document.Document) error {
		if d.IsDeleted {
			return document.ErrUnchanged
		}
		d.IsDeleted, d.DeletedAt, d.UpdatedAt = true, t0.Add(time.Hour), t0.Add(time.Hour)
		return nil
	}
	for range 2 {
		_, err := s.Update(ctx, "a", document.Refs{}, del)
		testkit.Must(t, err, "delete")
	}
	n, err := s.Outbox().Collection().CountDocuments(ctx, bson.M{"subject": "library.catalog.document.deleted"})
	testkit.Must(t, err, "count the outbox")
	if n != 1 {
		t.Errorf("%d deletion events in the outbox, want exactly one", n)
	}
}

// Documents stored before the sequence existed get a place in it.
func TestDocumentsWithoutSeqJoinTheSequence(t *testing.T) {
	t.Parallel()
	db := testkit.Mongo(t)
	_, err := db.Collection("documents").InsertOne(context.Background(), bson.M{"_id": "old", "title": "Old", "type": "LINK",
		"url": "https://x.org", "tagsIds": bson.A{"t"}, "isDeleted": false, "createdAt": t0, "updatedAt": t0, "refsAt": t0})
	testkit.Must(t, err, "legacy insert")
	s := mongostore.New(db, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	testkit.Must(t, s.EnsureIndexes(ctx), "EnsureIndexes")
	ch, err := s.Changes(ctx, 0, "", 10)
	testkit.Must(t, err, "Changes")
	if len(ch) != 1 || ch[0].Seq == 0 || strings.Join(ch[0].TagsIDs, ",") != "t" || ch[0].TagSince != nil {
		t.Fatalf("Changes = %+v, want the old document with a seq", ch)
	}
	_, err = s.Update(ctx, "old", document.Refs{}, func(d *document.Document) error { d.Title = "New"; return nil })
	testkit.Must(t, err, "Update")
	var raw bson.M
	testkit.Must(t, s.Documents().FindOne(ctx, bson.M{"_id": "old"}).Decode(&raw), "raw")
	if _, ok := raw["refsAt"]; ok {
		t.Error("refsAt of an earlier version stayed after a write")
	}
}

// A write whose caller goes away (its request's context ends: the client
// left, the request's time budget ran out) once its closure has run is
// committed whole: its outcome was decided.
func TestACallerGoneAfterTheClosureIsCommitted(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	_, err := s.Create(context.Background(), "a", document.Refs{}, link)
	testkit.Must(t, err, "Create a")
	goneAfter := func(fn func(*document.Document) error) (context.Context, func(*document.Document) error) {
		ctx, cancel := context.WithCancel(context.Background())
		return ctx, func(d *document.Document) error {
			defer cancel()
			return fn(d)
		}
	}
	ctx, fn := goneAfter(link)
	_, createErr := s.Create(ctx, "b", document.Refs{}, fn)
	ctx, fn = goneAfter(func(d *document.Document) error { d.Title = "changed"; return nil })
	_, updateErr := s.Update(ctx, "a", document.Refs{}, fn)

	bg := context.Background()
	if b, err := s.Get(bg, "b"); createErr != nil || err != nil || b.Title != "L" {
		t.Errorf("the create answered %v; stored: %+v, %v", createErr, b, err)
	}
	if a, _ := s.Get(bg, "a"); updateErr != nil || a.Title != "changed" {
		t.Errorf("the update answered %v; stored title %q", updateErr, a.Title)
	}
}

// Issue 24: the retention by age never removes a document's newest
// revision, however old: the document keeps its history's last entry.
func TestExpiringRevisionsKeepsTheNewest(t *testing.T) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	for _, id := range []string{"a", "b"} {
		_, err := s.Create(ctx, id, document.Refs{}, func(d *document.Document) error {
			_ = link(d)
			d.Version = 3
			return nil
		})
		testkit.Must(t, err, "Create")
		var revs []document.Revision
		for v := int64(1); v <= 3; v++ {
			revs = append(revs, document.Revision{DocumentID: id, Version: v,
				Change: document.Change{At: t0.Add(time.Duration(v) * time.Minute), Why: "test"}, Doc: document.Document{ID: id, Title: "L"}})
		}
		testkit.Must(t, s.PutRevisions(ctx, revs), "PutRevisions")
	}
	n, err := s.ExpireRevisions(ctx, time.Now())
	testkit.Must(t, err, "ExpireRevisions")
	if n != 4 {
		t.Errorf("ExpireRevisions removed %d, want 4 (versions 1 and 2 of each document)", n)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := s.GetRevision(ctx, id, 3); err != nil {
			t.Errorf("the newest revision of %s: %v, want it kept", id, err)
		}
		if _, err := s.GetRevision(ctx, id, 2); err == nil {
			t.Errorf("revision 2 of %s kept, want it expired", id)
		}
	}
}

// A create's event is in the outbox of its transaction, with the change's
// number and the public detail of a public document.
func TestACreateAnnouncesItselfWithItsPublicShape(t *testing.T) {
	t.Parallel()
	s, ctx := newStore(t), context.Background()
	s.RenderPublic(func(d document.Document) json.RawMessage { return json.RawMessage(`{"title":"` + d.Title + `"}`) })
	d, err := s.Create(ctx, "a", document.Refs{}, func(d *document.Document) error {
		_ = link(d)
		d.Status, d.Version, d.Change = document.Published, 1, document.Change{By: "ed", At: t0, Why: "test"}
		return nil
	})
	testkit.Must(t, err, "Create")
	var rec struct {
		Envelope string `bson:"envelope"`
	}
	testkit.Must(t, s.Outbox().Collection().FindOne(ctx, bson.M{"subject": "library.catalog.document.created"}).Decode(&rec), "find the event")
	var env struct {
		Data events.DocumentData `json:"data"`
	}
	testkit.Must(t, json.Unmarshal([]byte(rec.Envelope), &env), "decode")
	if got := env.Data; got.DocumentID != "a" || got.Seq != d.Seq || got.Version != 1 || got.Actor != "ed" || string(got.Public) != `{"title":"L"}` {
		t.Errorf("event data %+v, want document a at seq %d by ed with its public shape", got, d.Seq)
	}
}
