package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/lookup"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/taxonomy/internal/httpapi"
	"github.com/doclib/services/taxonomy/internal/tag"
	"github.com/doclib/services/taxonomy/internal/tag/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

type api struct {
	t     *testing.T
	h     http.Handler
	store *mongostore.Store
	box   *outbox.Outbox
	keys  *mongo.Collection // the Idempotency-Key middleware's records (keyedAPI)
}

func newAPI(t *testing.T) *api {
	t.Helper()
	t.Parallel()
	db := testkit.Mongo(t)
	box := outbox.New(db, testkit.Logger(t))
	store := mongostore.New(db, box, testkit.Logger(t))
	testkit.Must(t, store.EnsureIndexes(t.Context()), "indexes")
	a := &api{t: t, store: store, box: box}
	a.h = a.engine()
	return a
}

// replica returns another taxonomy replica on the same database.
func (a *api) replica() *api {
	b := &api{t: a.t, store: a.store}
	b.h = b.engine()
	return b
}

func (a *api) engine() http.Handler {
	e := httpx.NewEngine("taxonomy", slog.New(slog.DiscardHandler))
	httpapi.New(tag.NewService(a.store), a.store).Register(e)
	return e
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.body), v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.body, err)
	}
}

func (a *api) do(method, path, body string, header ...string) response {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return response{rec.Code, rec.Header(), rec.Body.String()}
}

func (a *api) must(method, path, body string, want int) response {
	a.t.Helper()
	r := a.do(method, path, body)
	if r.status != want {
		a.t.Fatalf("%s %s %s: status %d, want %d; body %s", method, path, body, r.status, want, r.body)
	}
	return r
}

type problemBody struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Errors []struct {
		Field, Message string
	} `json:"errors"`
}

func fields(t *testing.T, r response) []string {
	t.Helper()
	var p problemBody
	r.json(t, &p)
	var out []string
	for _, e := range p.Errors {
		out = append(out, e.Field)
	}
	return out
}

func TestCreateAndList(t *testing.T) {
	a := newAPI(t)
	r := a.must("POST", "/bo/tags-categories", `{"id":"health","name":"  Santé "}`, 201)
	if loc := r.header.Get("Location"); loc != "/bo/tags-categories/health" {
		t.Errorf("Location = %q", loc)
	}
	var created map[string]any
	r.json(t, &created)
	if created["name"] != "Santé" || created["tags"] == nil {
		t.Errorf("created = %v, want trimmed name and tags []", created)
	}
	for _, k := range []string{"createdAt", "updatedAt"} {
		s, _ := created[k].(string)
		if len(s) != len("2026-11-22T10:15:30.123Z") || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s = %q, want RFC 3339 UTC with milliseconds", k, s)
		}
	}
	a.must("POST", "/bo/tags-categories", `{"id":"audience","name":"Public"}`, 201)
	r = a.must("POST", "/bo/tags", `{"id":"vax","name":"Vaccins","categoryId":"health"}`, 201)
	if loc := r.header.Get("Location"); loc != "/bo/tags/vax" {
		t.Errorf("Location = %q", loc)
	}

	r = a.must("GET", "/public/tags-categories", "", 200)
	want := `[{"id":"health","name":"Santé","tags":[{"id":"vax","name":"Vaccins","categoryId":"health"}]},{"id":"audience","name":"Public","tags":[]}]`
	if r.body != want {
		t.Errorf("public listing\n got %s\nwant %s", r.body, want)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	var admin []map[string]any
	a.must("GET", "/bo/tags-categories", "", 200).json(t, &admin)
	tags := admin[0]["tags"].([]any)
	if _, ok := tags[0].(map[string]any)["createdAt"]; !ok || admin[0]["createdAt"] == nil {
		t.Errorf("admin listing lacks timestamps: %v", admin)
	}
}

func TestBadInput(t *testing.T) {
	a := newAPI(t)
	a.must("POST", "/bo/tags-categories", `{"id":"c1","name":"One"}`, 201)
	long := strings.Repeat("x", 101)
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
		fields                   []string
	}{
		{"malformed JSON", "POST", "/bo/tags-categories", `{"id":`, 400, "bad_request", nil},
		{"wrong types, all named", "POST", "/bo/tags", `{"id":1,"name":true,"categoryId":"c1"}`, 400, "bad_request", []string{"id", "name"}},
		{"not an object", "POST", "/bo/tags", `[1]`, 400, "bad_request", nil},
		{"every field at once", "POST", "/bo/tags", `{"id":"-bad","name":"` + long + `","categoryId":"nope"}`, 422, "validation_failed", []string{"id", "name", "categoryId"}},
		{"missing fields", "POST", "/bo/tags-categories", `{}`, 422, "validation_failed", []string{"id", "name"}},
		{"blank name", "POST", "/bo/tags-categories", `{"id":"c2","name":"   "}`, 422, "validation_failed", []string{"name"}},
		{"id too long", "POST", "/bo/tags-categories", `{"id":"` + strings.Repeat("a", 65) + `","name":"x"}`, 422, "validation_failed", []string{"id"}},
		{"duplicate id", "POST", "/bo/tags-categories", `{"id":"c1","name":"Other"}`, 409, "conflict", []string{"id"}},
		{"duplicate name any case", "POST", "/bo/tags-categories", `{"id":"c2","name":"ONE"}`, 409, "conflict", []string{"name"}},
		{"rename unknown", "PATCH", "/bo/tags-categories/nope", `{"name":"x"}`, 404, "not_found", nil},
		{"rename with bad name", "PATCH", "/bo/tags-categories/c1", `{"name":""}`, 422, "validation_failed", []string{"name"}},
		{"delete unknown category", "DELETE", "/bo/tags-categories/nope", "", 404, "not_found", nil},
		{"delete unknown tag", "DELETE", "/bo/tags/nope", "", 404, "not_found", nil},
		{"patch unknown tag", "PATCH", "/bo/tags/nope", `{"name":"x"}`, 404, "not_found", nil},
		{"unknown route", "GET", "/bo/nothing", "", 404, "not_found", nil},
		{"wrong method", "PUT", "/bo/tags/x", "", 405, "method_not_allowed", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.do(tt.method, tt.path, tt.body)
			if r.status != tt.status {
				t.Fatalf("status %d, want %d; body %s", r.status, tt.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Errorf("Content-Type = %q, want application/problem+json", ct)
			}
			var p problemBody
			r.json(t, &p)
			if p.Code != tt.code || p.Status != tt.status {
				t.Errorf("problem = %+v, want code %s", p, tt.code)
			}
			if got := strings.Join(fields(t, r), ","); tt.fields != nil && got != strings.Join(tt.fields, ",") {
				t.Errorf("failing fields = %s, want %s", got, strings.Join(tt.fields, ","))
			}
		})
	}
	// Nothing was changed by the bad requests.
	if r := a.must("GET", "/public/tags-categories", "", 200); r.body != `[{"id":"c1","name":"One","tags":[]}]` {
		t.Errorf("after bad input the listing is %s", r.body)
	}
}

func TestContentTypeAndSize(t *testing.T) {
	a := newAPI(t)
	req := httptest.NewRequest("POST", "/bo/tags-categories", strings.NewReader(`{"id":"a","name":"b"}`))
	req.Header.Set("Content-Type", "text/plain")
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	if rec.Code != 415 {
		t.Errorf("text/plain: status %d, want 415", rec.Code)
	}
	big := `{"id":"a","name":"` + strings.Repeat("x", httpx.MaxJSONBody) + `"}`
	if r := a.do("POST", "/bo/tags-categories", big); r.status != 413 {
		t.Errorf("over 2 MiB: status %d, want 413", r.status)
	}
}

func TestRenameAndDelete(t *testing.T) {
	a := newAPI(t)
	a.must("POST", "/bo/tags-categories", `{"id":"c1","name":"One"}`, 201)
	a.must("POST", "/bo/tags", `{"id":"t1","name":"A","categoryId":"c1"}`, 201)
	a.must("POST", "/bo/tags", `{"id":"t2","name":"B","categoryId":"c1"}`, 201)

	var c map[string]any
	a.must("PATCH", "/bo/tags-categories/c1", `{"name":"Uno","ignored":true}`, 200).json(t, &c)
	if c["name"] != "Uno" || len(c["tags"].([]any)) != 2 {
		t.Errorf("renamed category = %v", c)
	}
	var tg map[string]any
	a.must("PATCH", "/bo/tags/t1", `{"name":"Alpha"}`, 200).json(t, &tg)
	if tg["name"] != "Alpha" || tg["categoryId"] != "c1" {
		t.Errorf("renamed tag = %v", tg)
	}
	if r := a.do("PATCH", "/bo/tags/t2", `{"name":"alpha"}`); r.status != 409 {
		t.Errorf("tag rename onto a sibling's name: %d, want 409", r.status)
	}

	a.must("DELETE", "/bo/tags/t2", "", 204)
	a.must("DELETE", "/bo/tags-categories/c1", "", 204)
	// Events: each change's, recorded with it; the refused rename has none.
	evs, err := a.box.Pending(t.Context())
	testkit.Must(t, err, "pending events")
	want := []string{events.CategoryCreated, events.TagCreated, events.TagCreated, events.CategoryRenamed, events.TagRenamed,
		events.TagDeleted, events.CategoryDeleted, events.TagDeleted}
	if len(evs) != len(want) {
		t.Fatalf("events recorded = %d; want %d", len(evs), len(want))
	}
	for i, w := range want {
		if evs[i].Type != w {
			t.Errorf("event %d = %s, want %s", i, evs[i].Type, w)
		}
	}
	if r := a.must("GET", "/public/tags-categories", "", 200); r.body != "[]" {
		t.Errorf("listing after delete = %s, want []", r.body)
	}
	if r := a.must("GET", "/internal/tags?ids=t1,t2", "", 200); r.body != "[]" {
		t.Errorf("tags of a deleted category still found: %s", r.body)
	}
	a.must("PATCH", "/bo/tags/t1", `{"name":"x"}`, 404)
	// The id is free again at once.
	a.must("POST", "/bo/tags-categories", `{"id":"c1","name":"One"}`, 201)
}

func TestInternalLookup(t *testing.T) {
	a := newAPI(t)
	a.must("POST", "/bo/tags-categories", `{"id":"c1","name":"One"}`, 201)
	a.must("POST", "/bo/tags", `{"id":"t1","name":"A","categoryId":"c1"}`, 201)
	r := a.must("GET", "/internal/tags?ids=t1,unknown,-bad&ids=t1", "", 200)
	var found []map[string]any
	testkit.Must(t, json.Unmarshal([]byte(r.body), &found), "lookup JSON")
	if len(found) != 1 || found[0]["id"] != "t1" || found[0]["categoryId"] != "c1" || found[0]["createdAt"] == nil {
		t.Errorf("lookup = %s, want t1 with its createdAt", r.body)
	}
	many := strings.TrimSuffix(strings.Repeat("x,", lookup.MaxIDs+1), ",")
	a.must("GET", "/internal/tags?ids="+many, "", 400)
}

// The categories are served from a rendering in memory: conditional,
// compressed from 1 KiB, HEAD alike; a write through another replica shows
// on the back-office at once and on the public side within publicLag.
func TestCategoriesFromMemory(t *testing.T) {
	a := newAPI(t)
	other := a.replica()
	a.must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	first := a.must("GET", "/public/tags-categories", "", 200)
	etag := first.header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || first.header.Get("Cache-Control") != "no-cache" || first.header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("public categories: headers %v: want a strong ETag, no-cache and Vary", first.header)
	}
	if r := a.do("GET", "/public/tags-categories", "", "If-None-Match", etag, "Cache-Control", "no-cache"); r.status != 304 || r.body != "" {
		t.Errorf("If-None-Match with the current ETag: %d %q, want 304", r.status, r.body)
	}
	head := a.must("HEAD", "/public/tags-categories", "", 200)
	if head.body != "" || head.header.Get("ETag") != etag || head.header.Get("Content-Length") != first.header.Get("Content-Length") {
		t.Errorf("HEAD: %v %q, want GET's headers and no body", head.header, head.body)
	}
	bo := a.must("GET", "/bo/tags-categories", "", 200)
	if bo.header.Get("Cache-Control") != "private, no-cache" || bo.header.Get("ETag") == etag {
		t.Errorf("BO categories: headers %v: want private, no-cache and their own ETag", bo.header)
	}

	// A write through the other replica: this one's back-office sees it at
	// once (it compares the revision on every read).
	for i := 0; i < 20; i++ {
		other.must("POST", "/bo/tags", fmt.Sprintf(`{"id":"tag-%d","name":"Une étiquette assez longue n°%d","categoryId":"health"}`, i, i), 201)
	}
	var admin []struct{ Tags []any }
	a.must("GET", "/bo/tags-categories", "", 200).json(t, &admin)
	if len(admin) != 1 || len(admin[0].Tags) != 20 {
		t.Fatalf("BO categories after writes through another replica: %+v, want the 20 tags at once", admin)
	}
	var public response
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		public = a.do("GET", "/public/tags-categories", "", "If-None-Match", etag, "Accept-Encoding", "gzip")
		if public.status == 200 || time.Now().After(deadline) {
			break
		}
	}
	if public.header.Get("Content-Encoding") != "gzip" || public.header.Get("ETag") == etag ||
		!strings.HasSuffix(public.header.Get("ETag"), `-gzip"`) {
		t.Errorf("public categories of %s bytes, gzip accepted: headers %v, want gzip with its own ETag",
			public.header.Get("Content-Length"), public.header)
	}
	if r := a.do("GET", "/public/tags-categories", "", "If-None-Match", public.header.Get("ETag")); r.status != 304 {
		t.Errorf("If-None-Match with the gzip ETag, identity asked: %d, want 304", r.status)
	}
}

// A public read asking for a revalidated answer (Cache-Control: no-cache,
// as the gateway does after a back-office write through it) sees a write
// through another replica at once, not within publicLag.
func TestPublicNoCacheComparesTheRevision(t *testing.T) {
	a := newAPI(t)
	other := a.replica()
	a.must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	a.must("GET", "/public/tags-categories", "", 200)
	other.must("PATCH", "/bo/tags-categories/health", `{"name":"Prévention"}`, 200)
	if r := a.do("GET", "/public/tags-categories", "", "Cache-Control", "no-cache"); !strings.Contains(r.body, "Prévention") {
		t.Errorf("public categories with Cache-Control: no-cache right after a rename through another replica: %s", r.body)
	}
}
