package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// TestImportTakesBodiesOverTheJSONLimit: a document of 1 MiB content and
// 1 MiB draft, JSON-escaped, is over the 2 MiB JSON limit; its import must
// be read (the import routes take up to MaxImportJSONBody).
func TestImportTakesBodiesOverTheJSONLimit(t *testing.T) {
	r := newReplica(t, testkit.Mongo(t), newWorld())
	pad := func(n int) string {
		return `{"id":"big","padding":"` + strings.Repeat("x", n) + `"}`
	}
	for _, path := range []string{"/bo/import/documents/big", "/bo/import/documents/big/revisions/1"} {
		if a := r.do("PUT", path, pad(3<<20)); a.code == http.StatusRequestEntityTooLarge {
			t.Errorf("PUT %s of 3 MiB: 413, want it read", path)
		}
		if a := r.do("PUT", path, pad(httpx.MaxImportJSONBody)); a.code != http.StatusRequestEntityTooLarge {
			t.Errorf("PUT %s over %d bytes: %d, want 413", path, httpx.MaxImportJSONBody, a.code)
		}
	}
}

// TestImportEntry: PUT /bo/import/documents/{id}/entry takes an archive's
// document entry (its revisions, then it) in one request, with the answers
// of the document route: 201, then 200 the same again, 409 another
// document; a document of another id than the path's is 422 before any
// revision is stored.
func TestImportEntry(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	const at = `"createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-20T09:00:04.118Z"`
	doc := func(id, title string, version int) string {
		return fmt.Sprintf(`{"id":%q,"title":%q,"type":"LINK","url":"https://example.org/i","tagsIds":[],"sources":[],`+
			`"relatedDocuments":[],"relatedIds":[],"isDeleted":false,%s,"createdBy":"alice","updatedBy":"bob",`+
			`"status":"published","version":%d,"publishedAt":"2026-11-20T09:00:03.118Z","draft":null}`, id, title, at, version)
	}
	rev := func(id, title string, v int) string {
		return fmt.Sprintf(`{"version":%d,"at":"2026-11-20T09:00:0%d.118Z","by":"alice","why":"PATCH","document":%s}`, v, v+2, doc(id, title, v))
	}
	entry := `{"document":` + doc("e1", "Two", 2) + `,"revisions":[` + rev("e1", "One", 1) + `,` + rev("e1", "Two", 2) + `]}`
	r.must("PUT", "/bo/import/documents/e1/entry", entry, 201)
	r.must("PUT", "/bo/import/documents/e1/entry", entry, 200)
	r.must("PUT", "/bo/import/documents/e1/entry", strings.Replace(entry, `"title":"Two","type"`, `"title":"Other","type"`, 1), 409)
	var one struct{ Document struct{ Title string } }
	r.must("GET", "/bo/documents/e1/revisions/1", "", 200).json(t, &one)
	var d struct {
		Title   string
		Version int
	}
	r.must("GET", "/bo/documents/e1/detail", "", 200).json(t, &d)
	if one.Document.Title != "One" || d.Title != "Two" || d.Version != 2 {
		t.Errorf("after the entry: revision 1 %+v, document %+v", one, d)
	}
	other := `{"document":` + doc("e3", "Three", 1) + `,"revisions":[` + rev("e2", "Three", 1) + `]}`
	if a := r.do("PUT", "/bo/import/documents/e2/entry", other); a.code != 422 {
		t.Fatalf("an entry whose document is not the path's: %d %s, want 422", a.code, a.body)
	}
	// Imported without its revisions, a document's current state becomes
	// the revision of its version (an export lists its history from it):
	// not the refused entry's revision.
	r.must("PUT", "/bo/import/documents/e2/entry", `{"document":`+doc("e2", "Not three", 1)+`,"revisions":[]}`, 201)
	var own struct {
		Why      string
		Document struct{ Title string }
	}
	r.must("GET", "/bo/documents/e2/revisions/1", "", 200).json(t, &own)
	if own.Document.Title != "Not three" || own.Why != document.WhyImport {
		t.Errorf("the revision of a document imported without its history: %+v, want its own state, made by an import", own)
	}
	var page struct{ Revisions []struct{ Version int64 } }
	r.must("GET", "/bo/documents/e2/revisions", "", 200).json(t, &page)
	if len(page.Revisions) != 1 || page.Revisions[0].Version != 1 {
		t.Errorf("its history: %+v, want its version's revision alone", page)
	}
}

// TestImportAppliesTheWriteRules: an import takes nothing a write would
// refuse: authors over 1,024 characters, more pins than a write takes or
// the document itself among them, a version no JSON client reads exactly.
func TestImportAppliesTheWriteRules(t *testing.T) {
	t.Parallel()
	r := newReplica(t, testkit.Mongo(t), newWorld())
	doc := func(id, extra string, version string) string {
		return `{"id":"` + id + `","title":"T","type":"LINK","url":"https://example.org/i","tagsIds":[],"sources":[],` +
			`"isDeleted":false,"createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-20T09:00:04.118Z",` +
			`"status":"published","version":` + version + `,"publishedAt":"2026-11-20T09:00:03.118Z",` + extra + `}`
	}
	pins := []string{`"w4"`}
	for i := range 50 {
		pins = append(pins, fmt.Sprintf(`"p%d"`, i))
	}
	for _, tc := range []struct{ id, extra, version, field string }{
		{"w1", `"createdBy":"` + strings.Repeat("a", 5000) + `","updatedBy":"bob","relatedIds":[]`, "1", "createdBy"},
		{"w2", `"createdBy":"a","updatedBy":"` + strings.Repeat("é", 1025) + `","relatedIds":[]`, "1", "updatedBy"},
		{"w3", `"createdBy":"a","updatedBy":"b","relatedIds":[]`, "9007199254740993", "version"},
		{"w4", `"createdBy":"a","updatedBy":"b","relatedIds":[` + strings.Join(pins, ",") + `]`, "1", "relatedIds"},
		{"w5", `"createdBy":"a","updatedBy":"b","relatedIds":["w5"]`, "1", "relatedIds[0]"},
		{"w6", `"createdBy":"a","updatedBy":"b","relatedIds":["x","x"]`, "1", "relatedIds[1]"},
	} {
		a := r.do("PUT", "/bo/import/documents/"+tc.id, doc(tc.id, tc.extra, tc.version))
		if a.code != 422 || !strings.Contains(string(a.body), `"field":"`+tc.field+`"`) {
			t.Errorf("%s: %d %.300s, want 422 on %s", tc.id, a.code, a.body, tc.field)
		}
		r.must("GET", "/bo/documents/"+tc.id+"/detail", "", 404)
	}
	a := r.do("PUT", "/bo/import/documents/w7/revisions/9007199254740993",
		`{"version":9007199254740993,"at":"2026-11-20T09:00:03.118Z","by":"a","why":"x","document":`+doc("w7", `"createdBy":"a","updatedBy":"b"`, "9007199254740993")+`}`)
	if a.code != 422 {
		t.Errorf("a revision above 2^53: %d %.300s, want 422", a.code, a.body)
	}
}
