package httpapi_test

// The editorial routes through the real Gin engine, on the development
// database, with taxonomy and media stood in for (doctest).

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/doctest"
	"github.com/doclib/services/catalog/internal/document/mongostore"
	"github.com/doclib/services/catalog/internal/httpapi"
	"github.com/doclib/services/catalog/internal/library"
)

func TestMain(m *testing.M) { testkit.Main(m) }

var since = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// replica is one catalog process: its service, memory and routes.
type replica struct {
	t     *testing.T
	world *doctest.World
	svc   *document.Service
	lib   *library.Library
	h     http.Handler
}

func newWorld() *doctest.World {
	return doctest.New().Tag("a", since, "c").Tag("b", since, "c").
		Media(document.Media{ID: "png", Name: "a.png", MimeType: "image/png"})
}

func newReplica(t *testing.T, db *mongo.Database, w *doctest.World) *replica {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	store := mongostore.New(db, log)
	testkit.Must(t, store.EnsureIndexes(context.Background()), "EnsureIndexes")
	svc := document.NewService(store, w, log)
	lib := library.New(store, w, log)
	engine := httpx.NewEngine("catalog", log)
	media, _ := url.Parse("http://127.0.0.1:1")
	httpapi.New(svc, lib, httpapi.Options{MediaURL: media}).Register(engine)
	return &replica{t: t, world: w, svc: svc, lib: lib, h: engine}
}

type answer struct {
	code int
	body []byte
	hdr  http.Header
}

func (a answer) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

func (a answer) problemCode(t *testing.T) string {
	var p struct{ Code string }
	a.json(t, &p)
	return p.Code
}

// do sends a request; headers are name, value pairs. Public reads ask for
// a revalidated answer, as the gateway does after a write.
func (r *replica) do(method, path, body string, headers ...string) answer {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Cache-Control", "no-cache")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	return answer{code: rec.Code, body: rec.Body.Bytes(), hdr: rec.Header()}
}

func (r *replica) must(method, path, body string, want int, headers ...string) answer {
	r.t.Helper()
	a := r.do(method, path, body, headers...)
	if a.code != want {
		r.t.Fatalf("%s %s = %d %s, want %d", method, path, a.code, a.body, want)
	}
	return a
}

type boDoc struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Status  string `json:"status"`
	Version int64  `json:"version"`
	Draft   *struct {
		Title string `json:"title"`
	} `json:"draft"`
}

func (r *replica) create(body string) boDoc {
	r.t.Helper()
	var d boDoc
	r.must("POST", "/bo/documents", body, 201).json(r.t, &d)
	return d
}

func linkBody(title, extra string) string {
	return fmt.Sprintf(`{"type":"LINK","title":%q,"url":"https://example.org/%s"%s}`, title, url.PathEscape(title), extra)
}

// publicTitles returns the public listing as id -> title.
func (r *replica) publicTitles() map[string]string {
	r.t.Helper()
	var list []struct{ ID, Title string }
	r.must("GET", "/public/documents", "", 200).json(r.t, &list)
	out := map[string]string{}
	for _, d := range list {
		out[d.ID] = d.Title
	}
	return out
}

func TestIfMatchOnEveryWrite(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	d := r.create(linkBody("one", ""))
	etag := r.must("GET", "/bo/documents/"+d.ID+"/detail", "", 200).hdr.Get("ETag")
	if !strings.HasPrefix(etag, `"1.`) {
		t.Fatalf("detail ETag %q, want the version first", etag)
	}
	next := r.must("PATCH", "/bo/documents/"+d.ID, linkBody("two", ""), 200, "If-Match", etag).hdr.Get("ETag")
	if next != `"2"` {
		t.Errorf("PATCH answer ETag %q", next)
	}
	stale := []struct{ method, path, body string }{
		{"PATCH", "/bo/documents/" + d.ID, linkBody("three", "")},
		{"PATCH", "/bo/documents/" + d.ID, linkBody("three", `,"draft":true`)},
		{"DELETE", "/bo/documents/" + d.ID, ""},
		{"POST", "/bo/documents/" + d.ID + "/restore", ""},
		{"POST", "/bo/documents/" + d.ID + "/unpublish", ""},
		{"POST", "/bo/documents/" + d.ID + "/publish", ""},
		{"DELETE", "/bo/documents/" + d.ID + "/draft", ""},
		{"POST", "/bo/documents/" + d.ID + "/revisions/1/restore", ""},
		{"PATCH", "/bo/documents/" + d.ID, linkBody("three", "")}, // a tag not made here
	}
	for i, w := range stale {
		tag := etag
		if i == len(stale)-1 {
			tag = `"garbage"`
		}
		a := r.do(w.method, w.path, w.body, "If-Match", tag)
		if a.code != 412 || a.problemCode(t) != "precondition_failed" {
			t.Errorf("%s %s with a stale If-Match = %d %s, want 412 precondition_failed", w.method, w.path, a.code, a.body)
		}
	}
	var got boDoc
	r.must("GET", "/bo/documents/"+d.ID+"/detail", "", 200).json(t, &got)
	if got.Title != "two" || got.Version != 2 || got.Status != "published" {
		t.Errorf("after refused writes: %+v", got)
	}
	r.must("DELETE", "/bo/documents/"+d.ID, "", 204, "If-Match", next)
	r.must("POST", "/bo/documents/"+d.ID+"/restore", "", 200) // no If-Match: as before
}

// If-Match uses the strong comparison (RFC 9110 §13.1.1): a weak tag
// naming the current version never matches, so the write is 412 and
// changes nothing; the same tag without W/ matches.
func TestAWeakIfMatchNeverMatches(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	d := r.create(linkBody("one", ""))
	etag := r.must("GET", "/bo/documents/"+d.ID+"/detail", "", 200).hdr.Get("ETag")
	for _, tag := range []string{"W/" + etag, "W/" + etag + `, "garbage"`} {
		if a := r.do("PATCH", "/bo/documents/"+d.ID, linkBody("two", ""), "If-Match", tag); a.code != 412 || a.problemCode(t) != "precondition_failed" {
			t.Errorf("PATCH with If-Match: %s = %d %s, want 412 precondition_failed", tag, a.code, a.body)
		}
	}
	if a := r.do("DELETE", "/bo/documents/"+d.ID, "", "If-Match", "W/"+etag); a.code != 412 {
		t.Errorf("DELETE with a weak If-Match = %d %s, want 412", a.code, a.body)
	}
	r.must("PATCH", "/bo/documents/"+d.ID, linkBody("two", ""), 200, "If-Match", etag)
}

// The detail's entity tag names its version only with the document's
// digest as it is now: a tag with the current version and another digest
// is 412 and changes nothing; the tag read, as sent or as its gzip
// rendering's, matches, and so does one whose related documents were
// renamed since.
func TestAnIfMatchIsComparedWhole(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	rel := r.create(linkBody("related", ""))
	d := r.create(linkBody("one", fmt.Sprintf(`,"relatedIds":[%q]`, rel.ID)))
	etag := r.must("GET", "/bo/documents/"+d.ID+"/detail", "", 200).hdr.Get("ETag")
	dot := strings.IndexByte(etag, '.')
	own := etag[:dot+13]
	for _, tag := range []string{`"1.ffffffffffff"`, `"1.x"`, `"1.ffffffffffff` + etag[dot+13:], own + `0ffffffffff"`} {
		if a := r.do("PATCH", "/bo/documents/"+d.ID, linkBody("two", ""), "If-Match", tag); a.code != 412 || a.problemCode(t) != "precondition_failed" {
			t.Errorf("PATCH with If-Match %s (the detail's is %s) = %d %s, want 412", tag, etag, a.code, a.body)
		}
	}
	r.must("PATCH", "/bo/documents/"+rel.ID, linkBody("renamed", ""), 200)
	r.must("PATCH", "/bo/documents/"+d.ID, linkBody("two", fmt.Sprintf(`,"relatedIds":[%q]`, rel.ID)), 200,
		"If-Match", own+`ffffffffffff-gzip"`)
}

func TestDraftsAreNeverPublic(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	live := r.create(linkBody("live", ""))
	draft := r.create(linkBody("draft", `,"status":"draft","tagsIds":["a"]`))
	pinning := r.create(linkBody("pinning", fmt.Sprintf(`,"relatedIds":[%q]`, draft.ID)))
	if draft.Status != "draft" || live.Status != "published" {
		t.Fatalf("statuses %q %q", draft.Status, live.Status)
	}
	first := r.sync("")
	if _, seen := r.publicTitles()[draft.ID]; seen || slices.Contains(first.ids(), draft.ID) {
		t.Errorf("a draft is public: listing %v, sync %v", r.publicTitles(), first.ids())
	}
	r.must("GET", "/public/documents/"+draft.ID+"/detail", "", 404)
	r.must("GET", "/public/documents/"+draft.ID+"/download", "", 404)
	var detail struct {
		RelatedDocuments []struct{ ID string } `json:"relatedDocuments"`
	}
	r.must("GET", "/public/documents/"+pinning.ID+"/detail", "", 200).json(t, &detail)
	if len(detail.RelatedDocuments) != 0 {
		t.Errorf("a pinned draft shows as related: %+v", detail)
	}
	var bo []struct{ ID, Status string }
	r.must("GET", "/bo/documents", "", 200).json(t, &bo)
	if len(bo) != 3 {
		t.Errorf("back-office listing %+v, want the draft too", bo)
	}

	r.must("POST", "/bo/documents/"+draft.ID+"/publish", "", 200)
	second := r.sync(first.Cursor)
	if r.publicTitles()[draft.ID] != "draft" || !slices.Contains(second.ids(), draft.ID) {
		t.Errorf("published draft: listing %v, sync %+v", r.publicTitles(), second)
	}
	r.must("POST", "/bo/documents/"+draft.ID+"/unpublish", "", 200)
	third := r.sync(second.Cursor)
	if _, seen := r.publicTitles()[draft.ID]; seen || !slices.Contains(third.Removed, draft.ID) {
		t.Errorf("unpublished: listing %v, sync %+v", r.publicTitles(), third)
	}
	if a := r.do("POST", "/bo/documents/"+draft.ID+"/unpublish", ""); a.code != 409 || a.problemCode(t) != "not_published" {
		t.Errorf("unpublish of a draft = %d %s", a.code, a.body)
	}
}

type syncPage struct {
	Cursor    string `json:"cursor"`
	Documents []struct {
		ID, Title string
	} `json:"documents"`
	Removed []string `json:"removedDocumentIds"`
}

func (p syncPage) ids() []string {
	var out []string
	for _, d := range p.Documents {
		out = append(out, d.ID)
	}
	return out
}

func (r *replica) sync(cursor string) syncPage {
	r.t.Helper()
	path := "/public/sync"
	if cursor != "" {
		path += "?cursor=" + url.QueryEscape(cursor)
	}
	var p syncPage
	r.must("GET", path, "", 200).json(r.t, &p)
	return p
}

func TestPendingChanges(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	d := r.create(linkBody("live", ""))
	var got boDoc
	r.must("PATCH", "/bo/documents/"+d.ID, linkBody("pending", `,"draft":true`), 200).json(t, &got)
	if got.Title != "live" || got.Draft == nil || got.Draft.Title != "pending" {
		t.Errorf("PATCH draft answer %+v", got)
	}
	if r.publicTitles()[d.ID] != "live" {
		t.Errorf("public side sees pending changes: %v", r.publicTitles())
	}
	r.must("GET", "/bo/documents/"+d.ID+"/detail", "", 200).json(t, &got)
	if got.Draft == nil || got.Draft.Title != "pending" || got.Title != "live" {
		t.Errorf("back-office detail %+v, want both versions", got)
	}
	r.must("POST", "/bo/documents/"+d.ID+"/publish", "", 200)
	if r.publicTitles()[d.ID] != "pending" {
		t.Errorf("published pending changes: %v", r.publicTitles())
	}
	if a := r.do("POST", "/bo/documents/"+d.ID+"/publish", ""); a.code != 409 || a.problemCode(t) != "nothing_to_publish" {
		t.Errorf("second publish = %d %s", a.code, a.body)
	}
	if a := r.do("DELETE", "/bo/documents/"+d.ID+"/draft", ""); a.code != 409 || a.problemCode(t) != "no_pending_changes" {
		t.Errorf("discard without pending changes = %d %s", a.code, a.body)
	}
	r.must("PATCH", "/bo/documents/"+d.ID, linkBody("again", `,"draft":true`), 200)
	r.must("DELETE", "/bo/documents/"+d.ID+"/draft", "", 200).json(t, &got)
	if got.Draft != nil || r.publicTitles()[d.ID] != "pending" {
		t.Errorf("discarded: %+v, public %v", got, r.publicTitles())
	}
}

func TestRevisionRoutes(t *testing.T) {
	t.Parallel()
	w := newWorld()
	r := newReplica(t, testkit.Mongo(t), w)
	d := r.create(`{"type":"MARKDOWN","title":"v1","content":"x","tagsIds":["a","b"],"imagesIds":["png"]}`)
	for i := 2; i <= 5; i++ {
		r.must("PATCH", "/bo/documents/"+d.ID, fmt.Sprintf(`{"type":"MARKDOWN","title":"v%d","content":"y"}`, i), 200)
	}
	var page struct {
		Revisions []struct {
			Version int64  `json:"version"`
			Why     string `json:"why"`
		} `json:"revisions"`
		NextBefore int64 `json:"nextBefore"`
	}
	r.must("GET", "/bo/documents/"+d.ID+"/revisions?limit=2", "", 200).json(t, &page)
	if len(page.Revisions) != 2 || page.Revisions[0].Version != 5 || page.NextBefore != 4 {
		t.Errorf("first page %+v", page)
	}
	r.must("GET", fmt.Sprintf("/bo/documents/%s/revisions?limit=2&before=%d", d.ID, page.NextBefore), "", 200).json(t, &page)
	if len(page.Revisions) != 2 || page.Revisions[0].Version != 3 {
		t.Errorf("second page %+v", page)
	}
	revisionsInFull(t, r, d.ID)
	var one struct {
		Version  int64 `json:"version"`
		Document struct{ Title string }
	}
	r.must("GET", "/bo/documents/"+d.ID+"/revisions/1", "", 200).json(t, &one)
	if one.Document.Title != "v1" {
		t.Errorf("revision 1 = %+v", one)
	}
	other := r.create(linkBody("other", ""))
	for _, path := range []string{"/bo/documents/" + d.ID + "/revisions/9", "/bo/documents/" + d.ID + "/revisions/x",
		"/bo/documents/" + other.ID + "/revisions/5"} {
		if a := r.do("GET", path, ""); a.code != 404 || a.problemCode(t) != "revision_not_found" {
			t.Errorf("GET %s = %d %s", path, a.code, a.body)
		}
	}
	if a := r.do("POST", "/bo/documents/"+other.ID+"/revisions/5/restore", ""); a.code != 404 {
		t.Errorf("restore of another document's revision = %d %s", a.code, a.body)
	}
	w.Untag("b")
	w.Unmedia("png")
	var restored struct {
		Title   string   `json:"title"`
		TagsIDs []string `json:"tagsIds"`
		Version int64    `json:"version"`
		Dropped struct {
			TagsIDs  []string `json:"tagsIds"`
			MediaIDs []string `json:"mediaIds"`
		} `json:"dropped"`
	}
	r.must("POST", "/bo/documents/"+d.ID+"/revisions/1/restore", "", 200).json(t, &restored)
	if restored.Title != "v1" || strings.Join(restored.TagsIDs, ",") != "a" || restored.Version != 6 ||
		strings.Join(restored.Dropped.TagsIDs, ",") != "b" || strings.Join(restored.Dropped.MediaIDs, ",") != "png" {
		t.Errorf("restored %+v", restored)
	}
}

// TestRevisionListingCrossesAGap (review finding 1): a revision missing
// from a page (not stored yet, or removed) does not end the listing: the
// page says where the next starts whenever versions below remain, and
// following nextBefore reaches revision 1.
func TestRevisionListingCrossesAGap(t *testing.T) {
	t.Parallel()
	db := testkit.Mongo(t)
	r := newReplica(t, db, newWorld())
	d := r.create(`{"type":"MARKDOWN","title":"v1","content":"x"}`)
	for i := 2; i <= 5; i++ {
		r.must("PATCH", "/bo/documents/"+d.ID, fmt.Sprintf(`{"type":"MARKDOWN","title":"v%d","content":"y"}`, i), 200)
	}
	_, err := db.Collection("revisions").DeleteOne(context.Background(), bson.M{"_id": d.ID + "/4"})
	testkit.Must(t, err, "delete revision 4")
	for _, full := range []string{"false", "true"} {
		var got []int64
		path := "/bo/documents/" + d.ID + "/revisions?limit=2&full=" + full
		for pages := 0; path != "" && pages < 5; pages++ {
			var page struct {
				Revisions []struct {
					Version int64 `json:"version"`
				} `json:"revisions"`
				NextBefore int64 `json:"nextBefore"`
			}
			r.must("GET", path, "", 200).json(t, &page)
			for _, rev := range page.Revisions {
				got = append(got, rev.Version)
			}
			path = ""
			if page.NextBefore != 0 {
				path = fmt.Sprintf("/bo/documents/%s/revisions?limit=2&full=%s&before=%d", d.ID, full, page.NextBefore)
			}
		}
		if fmt.Sprint(got) != "[5 3 2 1]" {
			t.Errorf("full=%s: the pages listed revisions %v; want [5 3 2 1] (4 is missing)", full, got)
		}
	}
}

// TestFullRevisionPagesAreCapped (review finding 5): a page of whole
// revisions holds at most 20 whatever limit asks, and says where the next
// starts.
func TestFullRevisionPagesAreCapped(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	d := r.create(`{"type":"MARKDOWN","title":"v1","content":"x"}`)
	for i := 2; i <= 25; i++ {
		r.must("PATCH", "/bo/documents/"+d.ID, fmt.Sprintf(`{"type":"MARKDOWN","title":"v%d","content":"y"}`, i), 200)
	}
	var page struct {
		Revisions  []json.RawMessage `json:"revisions"`
		NextBefore int64             `json:"nextBefore"`
	}
	r.must("GET", "/bo/documents/"+d.ID+"/revisions?full=true&limit=200", "", 200).json(t, &page)
	if len(page.Revisions) != 20 || page.NextBefore != 6 {
		t.Errorf("full=true&limit=200: %d revisions, nextBefore %d; want 20, 6", len(page.Revisions), page.NextBefore)
	}
	page.NextBefore = 0
	r.must("GET", "/bo/documents/"+d.ID+"/revisions?limit=200", "", 200).json(t, &page)
	if len(page.Revisions) != 25 || page.NextBefore != 0 {
		t.Errorf("limit=200 (not full): %d revisions, nextBefore %d; want 25, none", len(page.Revisions), page.NextBefore)
	}
}

// revisionsInFull: ?full=true lists each revision as GET …/revisions/{rev}
// answers it, byte for byte (doclib export reads a history in one request).
func revisionsInFull(t *testing.T, r *replica, id string) {
	t.Helper()
	var full struct {
		Revisions  []json.RawMessage `json:"revisions"`
		NextBefore int64             `json:"nextBefore"`
	}
	r.must("GET", "/bo/documents/"+id+"/revisions?limit=4&full=true", "", 200).json(t, &full)
	if len(full.Revisions) != 4 || full.NextBefore != 2 {
		t.Fatalf("a full page: %d revisions, nextBefore %d; want 4, 2", len(full.Revisions), full.NextBefore)
	}
	for i, raw := range full.Revisions {
		one := r.must("GET", fmt.Sprintf("/bo/documents/%s/revisions/%d", id, 5-i), "", 200)
		if got, want := string(raw), strings.TrimSpace(string(one.body)); got != want {
			t.Errorf("revision %d in a full page:\n%s\nalone:\n%s", 5-i, got, want)
		}
	}
	for _, q := range []string{"full=yes", "limit=0"} {
		if a := r.do("GET", "/bo/documents/"+id+"/revisions?"+q, ""); a.code != 400 {
			t.Errorf("%s: %d %s, want 400", q, a.code, a.body)
		}
	}
}

func TestBadEditorialInput(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	soon := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct{ body, fields string }{
		{linkBody("x", fmt.Sprintf(`,"status":"draft","publishAt":%q`, past)), "publishAt"},
		{linkBody("x", `,"status":"draft","publishAt":"next monday"`), "publishAt"},
		{linkBody("x", fmt.Sprintf(`,"publishAt":%q`, soon)), "publishAt"},
		{linkBody("x", `,"status":"hidden"`), "status"},
		{linkBody("x", fmt.Sprintf(`,"status":"draft","publishAt":%q,"unpublishAt":%q`, soon, soon)), "unpublishAt"},
	} {
		a := r.do("POST", "/bo/documents", c.body)
		var p struct {
			Errors []struct{ Field string }
		}
		a.json(t, &p)
		var fields []string
		for _, e := range p.Errors {
			fields = append(fields, e.Field)
		}
		if a.code != 422 || strings.Join(fields, ",") != c.fields {
			t.Errorf("POST %s = %d %s, want 422 naming %s", c.body, a.code, a.body, c.fields)
		}
	}
	var bo []any
	r.must("GET", "/bo/documents", "", 200).json(t, &bo)
	if len(bo) != 0 {
		t.Errorf("refused creates left %d documents", len(bo))
	}
}

// Publish vs PATCH vs a scheduled publication on three replicas: the
// pending changes are published exactly once, and no change is lost (every
// accepted write has its revision, in an unbroken sequence).
func TestPublishRace(t *testing.T) {
	t.Parallel()
	db, w := testkit.Mongo(t), newWorld()
	replicas := []*replica{newReplica(t, db, w), newReplica(t, db, w), newReplica(t, db, w)}
	r := replicas[0]
	for round := range 5 {
		d := r.create(linkBody(fmt.Sprintf("live%d", round), ""))
		at := time.Now().Add(2 * time.Second) // room for a slow PATCH (-race, a loaded machine)
		r.must("PATCH", "/bo/documents/"+d.ID, linkBody("pending", fmt.Sprintf(`,"draft":true,"publishAt":%q`, at.UTC().Format(time.RFC3339Nano))), 200)
		time.Sleep(time.Until(at))
		done := make(chan answer, 8)
		for _, x := range replicas {
			go func() { done <- x.do("POST", "/bo/documents/"+d.ID+"/publish", "") }()
			go func() {
				_, err := x.svc.RunSchedule(context.Background(), time.Now(), 10)
				done <- answer{code: map[bool]int{true: 200, false: 500}[err == nil]}
			}()
		}
		go func() { done <- replicas[1].do("PATCH", "/bo/documents/"+d.ID, linkBody("late", `,"draft":true`), "") }()
		published, patched := 0, false
		for range 7 {
			a := <-done
			switch {
			case a.code == 500:
				t.Errorf("a write failed: %s", a.body)
			case strings.Contains(string(a.body), `"nothing_to_publish"`):
			case a.code == 200 && strings.Contains(string(a.body), `"late"`):
				patched = true
			}
		}
		page, err := r.svc.Revisions(context.Background(), d.ID, 0, 100, false)
		testkit.Must(t, err, "Revisions")
		revs := page.Revisions
		for i, rev := range revs {
			if rev.Version != int64(len(revs)-i) {
				t.Errorf("revisions not contiguous: %+v", revs)
				break
			}
			if rev.Change.Why == document.WhyPublish || rev.Change.Why == document.WhyScheduled {
				published++
			}
		}
		var got boDoc
		r.must("GET", "/bo/documents/"+d.ID+"/detail", "", 200).json(t, &got)
		lateKept := got.Title == "late" || (got.Draft != nil && got.Draft.Title == "late")
		// The first pending changes are published exactly once; a second
		// publication (a publish request after the late PATCH) can only
		// publish the late changes.
		once := published == 1 || (published == 2 && got.Title == "late" && got.Draft == nil)
		if !once || !patched || !lateKept {
			t.Errorf("round %d: %d publications, late PATCH accepted %v and kept %v; document %+v", round, published, patched, lateKept, got)
		}
	}
}

func TestPreviewRendersWithoutStoring(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	var p struct{ Type, Content, HTML string }
	r.must("POST", "/bo/documents/preview", `{"type":"MARKDOWN","content":"# Hi\n\n[x](javascript:alert(1))<script>alert(2)</script>"}`, 200).json(t, &p)
	if !strings.Contains(p.HTML, "<h1>Hi</h1>") || strings.Contains(p.HTML, "javascript:") || strings.Contains(p.HTML, "<script") {
		t.Errorf("preview html = %q", p.HTML)
	}
	if want, _ := document.SanitizeMarkdown(context.Background(), "# Hi\n\n[x](javascript:alert(1))<script>alert(2)</script>"); p.Content != want {
		t.Errorf("preview content = %q, not what a save stores", p.Content)
	}
	var list []struct{ ID string }
	r.must("GET", "/bo/documents", "", 200).json(t, &list)
	if len(list) != 0 {
		t.Errorf("a preview stored something: %+v", list)
	}
	for _, tc := range []struct {
		body, ctype string
		code        int
		problem     string
	}{
		{`{"type":"LINK","content":"x"}`, "application/json", 422, "validation_failed"},
		{`{"type":"HTML"`, "application/json", 400, ""},
		{`type=HTML`, "application/x-www-form-urlencoded", 415, ""},
		{`{"type":"HTML","content":"` + strings.Repeat("a", httpx.MaxJSONBody) + `"}`, "application/json", 413, ""},
	} {
		a := r.do("POST", "/bo/documents/preview", tc.body, "Content-Type", tc.ctype)
		if a.code != tc.code || a.hdr.Get("Content-Type") != "application/problem+json" ||
			(tc.problem != "" && a.problemCode(t) != tc.problem) {
			t.Errorf("preview of %.40q = %d %s %.200s, want %d problem %s", tc.body, a.code, a.hdr.Get("Content-Type"), a.body, tc.code, tc.problem)
		}
	}
}
