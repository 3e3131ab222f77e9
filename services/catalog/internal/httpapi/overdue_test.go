package httpapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

// A draft whose publishAt passed while it was in the trash is restored a
// draft, its schedule cleared and the answer saying so; the schedule then
// publishes nothing. publishAt may be written with a lower-case t and z
// (RFC 3339 §5.6).
func TestARestoredDraftIsNotPublishedByAnOverdueSchedule(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	at := strings.ToLower(time.Now().Add(time.Second).UTC().Format("2006-01-02T15:04:05.000Z"))
	d := r.trashUntilPast(linkBody("later", `,"status":"draft","publishAt":"`+at+`"`), "draft")
	var got struct {
		Status, PublishAt string
		ClearedSchedule   *struct{ PublishAt, Reason string }
	}
	r.must("POST", "/bo/documents/"+d.ID+"/restore", "", 200).json(t, &got)
	if got.Status != "draft" || got.PublishAt != "" || got.ClearedSchedule == nil || got.ClearedSchedule.PublishAt == "" {
		t.Errorf("restored: %+v, want a draft without publishAt, the answer naming the cleared schedule", got)
	}
	if _, err := r.svc.RunSchedule(context.Background(), time.Now(), 10); err != nil {
		t.Fatal(err)
	}
	r.must("GET", "/bo/documents/"+d.ID+"/detail", "", 200).json(t, &got)
	if got.Status != "draft" {
		t.Errorf("after the schedule ran: %s, want draft", got.Status)
	}
	if _, seen := r.publicTitles()[d.ID]; seen {
		t.Error("the restored draft is public")
	}
}

// An imported draft whose publishAt has passed is stored a draft, its
// schedule cleared and the answer saying so; the same entry again is 200.
func TestAnImportedDraftIsNotPublishedByAnOverdueSchedule(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	doc := lateDraft
	var got struct {
		Status, PublishAt string
		ClearedSchedule   *struct{ PublishAt string }
	}
	r.must("PUT", "/bo/import/documents/late", doc, 201).json(t, &got)
	if got.Status != "draft" || got.PublishAt != "" || got.ClearedSchedule == nil || got.ClearedSchedule.PublishAt != "2026-01-21T09:00:00.000Z" {
		t.Errorf("imported: %+v, want a draft without publishAt, the answer naming the cleared schedule", got)
	}
	r.must("PUT", "/bo/import/documents/late", doc, 200)
	if _, err := r.svc.RunSchedule(context.Background(), time.Now(), 10); err != nil {
		t.Fatal(err)
	}
	r.must("GET", "/bo/documents/late/detail", "", 200).json(t, &got)
	if got.Status != "draft" {
		t.Errorf("after the schedule ran: %s, want draft", got.Status)
	}
}

// A published document whose unpublishAt passed while it was in the trash
// is restored unpublished, a draft, the answer saying so; it is not public
// again.
func TestARestoredDocumentStaysOfflineAfterItsUnpublishTime(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	at := time.Now().Add(time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
	d := r.trashUntilPast(linkBody("expiring", `,"unpublishAt":"`+at+`"`), "published")
	var got struct {
		Status, UnpublishAt string
		ClearedSchedule     *struct{ UnpublishAt, Reason string }
	}
	r.must("POST", "/bo/documents/"+d.ID+"/restore", "", 200).json(t, &got)
	if got.Status != "draft" || got.UnpublishAt != "" || got.ClearedSchedule == nil || got.ClearedSchedule.UnpublishAt == "" {
		t.Errorf("restored: %+v, want a draft without unpublishAt, the answer naming the applied unpublication", got)
	}
	if _, seen := r.publicTitles()[d.ID]; seen {
		t.Error("the document restored after its unpublish time is public")
	}
}

// trashUntilPast creates a document of the given status from body, whose
// schedule is a second away, deletes it, and runs the schedule once that
// second has passed (a deleted document keeps its schedule).
func (r *replica) trashUntilPast(body, status string) boDoc {
	r.t.Helper()
	d := r.create(body)
	if d.Status != status {
		r.t.Fatalf("created %+v, want %s", d, status)
	}
	r.must("DELETE", "/bo/documents/"+d.ID, "", 204)
	time.Sleep(1500 * time.Millisecond)
	if _, err := r.svc.RunSchedule(context.Background(), time.Now(), 10); err != nil {
		r.t.Fatal(err)
	}
	return d
}

// The answer of an import (or a restore) that cleared a schedule may be
// sent back to PATCH as it is, clearedSchedule included.
func TestAClearingAnswerMayBeSentBack(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	doc := lateDraft
	imported := r.must("PUT", "/bo/import/documents/late", doc, 201)
	if !strings.Contains(string(imported.body), `"clearedSchedule"`) {
		t.Fatalf("imported: %s, want clearedSchedule", imported.body)
	}
	r.must("PATCH", "/bo/documents/late", string(imported.body), 200, "If-Match", imported.hdr.Get("ETag"))
}

// lateDraft is an exported draft whose publishAt has passed.
const lateDraft = `{"id":"late","title":"Late","type":"LINK","url":"https://example.org/l","tagsIds":[],"sources":[],"relatedIds":[],` +
	`"isDeleted":false,"createdAt":"2026-01-20T09:00:03.118Z","updatedAt":"2026-01-20T09:00:04.118Z","createdBy":"alice",` +
	`"updatedBy":"bob","status":"draft","version":1,"publishAt":"2026-01-21T09:00:00.000Z","draft":null}`
