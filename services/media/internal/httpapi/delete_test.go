package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
)

type storedDoc struct {
	ObjectKey  string     `bson:"objectKey"`
	SHA256     string     `bson:"sha256"`
	DeletingAt *time.Time `bson:"deletingAt"`
	DeletedAt  *time.Time `bson:"deletedAt"`
}

// recorded returns the events of subject in the outbox, not yet
// published.
func (a *api) recorded(subject string) []events.Envelope {
	a.t.Helper()
	all, err := a.box.Pending(context.Background())
	testkit.Must(a.t, err, "read the outbox")
	var out []events.Envelope
	for _, e := range all {
		if e.Type == subject {
			out = append(out, e)
		}
	}
	return out
}

func (a *api) doc(id string) (storedDoc, bool) {
	a.t.Helper()
	var d storedDoc
	err := a.store.Collection().FindOne(context.Background(), bson.M{"_id": id}).Decode(&d)
	if err != nil {
		return d, false
	}
	return d, true
}

func (a *api) objectExists(key string) bool {
	a.t.Helper()
	ok, err := a.blobs.Exists(context.Background(), key)
	testkit.Must(a.t, err, "stat object")
	return ok
}

func TestDeleteInUse(t *testing.T) {
	a := newAPI(t, media.Config{})
	content := sample(pdfHead, 1000, 1)
	m := a.mustUpload("used.pdf", content)
	a.catalog.use(m.ID, "doc1", "doc2")

	p := a.serve(req("DELETE", "/bo/medias/"+m.ID)).problem(t, 409, "media_in_use")
	if !strings.Contains(p.Detail, "doc1") || !strings.Contains(p.Detail, "doc2") {
		t.Errorf("detail %q should name the documents", p.Detail)
	}
	if r := a.get("/public/medias/" + m.ID + "/download"); r.status != 200 || !bytes.Equal(r.body, content) {
		t.Errorf("after a refused delete, download: status %d, want 200 and the file", r.status)
	}
	a.must("GET", "/bo/medias/"+m.ID, 200)
	if d, _ := a.doc(m.ID); d.DeletingAt != nil || d.DeletedAt != nil || len(a.recorded(events.MediaDeleted)) != 0 {
		t.Errorf("record after a refused delete %+v (events %v), want it live and no event", d, a.recorded(events.MediaDeleted))
	}
	if a.deleted != 0 {
		t.Errorf("deletion hook ran %d times, want 0", a.deleted)
	}
}

func TestDeleteWhileCatalogDown(t *testing.T) {
	a := newAPI(t, media.Config{})
	m := a.mustUpload("a.png", sample(pngHead, 1000, 1))
	a.catalog.srv.Close()
	within(t, 8*time.Second, "delete with the catalog down", func() {
		a.serve(req("DELETE", "/bo/medias/"+m.ID)).problem(t, 503, "unavailable")
	})
	a.must("GET", "/bo/medias/"+m.ID+"/download", 200)
	var list []adminMedia
	a.must("GET", "/bo/medias", 200).json(t, &list)
	if len(list) != 1 {
		t.Errorf("list has %d media, want the one not deleted", len(list))
	}
}

func TestDeleteThenSweep(t *testing.T) {
	a := newAPI(t, media.Config{})
	m := a.mustUpload("gone.pdf", sample(pdfHead, 1000, 1))
	keep := a.mustUpload("kept.pdf", sample(pdfHead, 1000, 2))
	d, _ := a.doc(m.ID)
	if !a.objectExists(d.ObjectKey) {
		t.Fatal("the object is not in the bucket after the upload")
	}

	a.must("DELETE", "/bo/medias/"+m.ID, 204)
	if a.deleted != 1 {
		t.Errorf("deletion hook ran %d times, want 1", a.deleted)
	}
	a.get("/bo/medias/"+m.ID).problem(t, 404, "not_found")
	a.get("/public/medias/"+m.ID).problem(t, 404, "not_found")
	a.get("/public/medias/"+m.ID+"/download").problem(t, 404, "not_found")
	a.serve(req("DELETE", "/bo/medias/"+m.ID)).problem(t, 404, "not_found")
	if r := a.must("GET", "/internal/medias?ids="+m.ID, 200); string(r.body) != "[]" {
		t.Errorf("lookup of a deleted media: %s, want []", r.body)
	}
	if a.objectExists(d.ObjectKey) {
		t.Error("the object is still in the bucket after the delete")
	}

	// The record went with its objects; the event waits in the outbox.
	if _, ok := a.doc(m.ID); ok {
		t.Error("the tombstone is still there once its objects are removed")
	}
	evs := a.recorded(events.MediaDeleted)
	if len(evs) != 1 || evs[0].Type != events.MediaDeleted || evs[0].Source != "/media" ||
		string(evs[0].Data) != `{"mediaId":"`+m.ID+`","actor":"`+uploader+`"}` {
		t.Errorf("events recorded %+v, want one %s with mediaId", evs, events.MediaDeleted)
	}

	// A deletion whose removal of the objects failed leaves its tombstone
	// (as here): the sweep removes the object, then the tombstone.
	late := a.mustUpload("late.pdf", sample(pdfHead, 1000, 3))
	ld, _ := a.doc(late.ID)
	_, err := a.store.Collection().UpdateOne(context.Background(), bson.M{"_id": late.ID},
		bson.M{"$set": bson.M{"deletedAt": time.Now(), "digest": "~deleted~" + late.ID}})
	testkit.Must(t, err, "make a tombstone")
	testkit.Must(t, a.svc.Sweep(context.Background()), "sweep")
	if _, ok := a.doc(late.ID); ok {
		t.Error("the tombstone is still there after the sweep")
	}
	if a.objectExists(ld.ObjectKey) {
		t.Error("the object is still there after the sweep")
	}
	testkit.Must(t, a.svc.Sweep(context.Background()), "sweep again")
	a.must("GET", "/bo/medias/"+keep.ID+"/download", 200)
}

func TestSweepReleasesStuckDeletions(t *testing.T) {
	a := newAPI(t, media.Config{})
	m := a.mustUpload("a.pdf", sample(pdfHead, 100, 1))
	fresh := a.mustUpload("b.pdf", sample(pdfHead, 100, 2))
	coll := a.store.Collection()
	ctx := context.Background()
	// A crash right after the mark: an old mark and a recent one.
	_, err := coll.UpdateOne(ctx, bson.M{"_id": m.ID}, bson.M{"$set": bson.M{"deletingAt": time.Now().Add(-2 * time.Minute), "deletingBy": "x"}})
	testkit.Must(t, err, "mark")
	_, err = coll.UpdateOne(ctx, bson.M{"_id": fresh.ID}, bson.M{"$set": bson.M{"deletingAt": time.Now(), "deletingBy": "y"}})
	testkit.Must(t, err, "mark")
	a.get("/bo/medias/"+m.ID+"/download").problem(t, 404, "not_found")
	a.serve(req("DELETE", "/bo/medias/"+m.ID)).problem(t, 404, "not_found")

	testkit.Must(t, a.svc.Sweep(ctx), "sweep")
	a.must("GET", "/bo/medias/"+m.ID+"/download", 200)
	a.get("/bo/medias/"+fresh.ID).problem(t, 404, "not_found") // still being deleted
	// The internal lookup shows it, marked: a stored reference to it stays
	// until the deletion is done.
	var found []map[string]any
	a.must("GET", "/internal/medias?ids="+fresh.ID+","+m.ID, 200).json(t, &found)
	deleting := map[string]any{}
	for _, f := range found {
		deleting[f["id"].(string)] = f["deleting"]
	}
	if len(found) != 2 || deleting[fresh.ID] != true || deleting[m.ID] != nil {
		t.Errorf("lookup %v, want %s deleting and %s not", found, fresh.ID, m.ID)
	}
	a.must("DELETE", "/bo/medias/"+m.ID, 204)
	if r := a.must("GET", "/internal/medias?ids="+m.ID, 200); string(r.body) != "[]" {
		t.Errorf("lookup of a deleted media %s, want []", r.body)
	}
}

func TestConcurrentDeletesAndUse(t *testing.T) {
	a := newAPI(t, media.Config{})
	m := a.mustUpload("a.pdf", sample(pdfHead, 100, 1))
	codes := make(chan int, 4)
	for range 4 {
		go func() { codes <- a.serve(req("DELETE", "/bo/medias/"+m.ID)).status }()
	}
	got := map[int]int{}
	for range 4 {
		got[<-codes]++
	}
	if got[204] != 1 || got[404]+got[409] != 3 {
		t.Errorf("statuses of 4 concurrent deletes %v, want one 204 and three 404 or 409", got)
	}
	a.get("/bo/medias/"+m.ID).problem(t, 404, "not_found")
	if evs := a.recorded(events.MediaDeleted); len(evs) != 1 {
		t.Errorf("%d events recorded, want 1", len(evs))
	}
}

// An upload records library.media.uploaded with its record, saying what
// was stored and by whom; the same bytes again (answered with the stored
// media) record nothing more.
func TestUploadRecordsItsEvent(t *testing.T) {
	a := newAPI(t, media.Config{})
	content := sample(pdfHead, 1000, 7)
	m := a.mustUpload("guide.pdf", content)
	a.upload(part{field: "file", filename: "again.pdf", content: content})
	evs := a.recorded(events.MediaUploaded)
	if len(evs) != 1 {
		t.Fatalf("%d upload events recorded, want 1", len(evs))
	}
	var got events.MediaUploadedData
	testkit.Must(t, json.Unmarshal(evs[0].Data, &got), "payload")
	want := events.MediaUploadedData{MediaID: m.ID, Name: "guide.pdf", MimeType: "application/pdf", Size: int64(len(content)),
		SHA256: got.SHA256, Actor: uploader}
	if got != want || len(got.SHA256) != 64 || evs[0].Source != "/media" {
		t.Errorf("upload event %s from %s, want %+v with the SHA-256", evs[0].Data, evs[0].Source, want)
	}
}
