package httpapi_test

import (
	"slices"
	"testing"
)

// TestImportIsExactAndIdempotent: an imported category and tag keep their
// ids and dates; the same record again is 200 and changes nothing; another
// record under the id is 409 import_conflict and changes nothing; a tag of
// an unknown category and a bad date are 422 naming the field.
func TestImportIsExactAndIdempotent(t *testing.T) {
	a := newAPI(t)
	cat := `{"id":"health","name":"Santé","createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-21T10:00:00.000Z"}`
	tag := `{"id":"vax","name":"Vaccins","categoryId":"health","createdAt":"2026-11-20T09:01:12.250Z","updatedAt":"2026-11-20T09:01:12.250Z"}`
	a.must("PUT", "/bo/import/tags-categories/health", cat, 201)
	a.must("PUT", "/bo/import/tags/vax", tag, 201)
	before := a.must("GET", "/bo/tags-categories", "", 200).body
	want := `[{"id":"health","name":"Santé","tags":[{"id":"vax","name":"Vaccins","categoryId":"health","createdAt":"2026-11-20T09:01:12.250Z","updatedAt":"2026-11-20T09:01:12.250Z"}],"createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-21T10:00:00.000Z"}]`
	if before != want {
		t.Errorf("after the import\n got %s\nwant %s", before, want)
	}
	a.must("PUT", "/bo/import/tags-categories/health", cat, 200)
	a.must("PUT", "/bo/import/tags/vax", tag, 200)
	r := a.must("PUT", "/bo/import/tags-categories/health",
		`{"id":"health","name":"Autre","createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-21T10:00:00.000Z"}`, 409)
	var p problemBody
	r.json(t, &p)
	if p.Code != "import_conflict" {
		t.Errorf("code %q, want import_conflict", p.Code)
	}
	if got := a.must("GET", "/bo/tags-categories", "", 200).body; got != before {
		t.Errorf("a refused import changed the categories: %s", got)
	}
	r = a.must("PUT", "/bo/import/tags/x", `{"id":"x","name":"X","categoryId":"nope","createdAt":"2026-11-20T09:01:12.250Z","updatedAt":"2026-11-20T09:01:12.250Z"}`, 422)
	if f := fields(t, r); !slices.Contains(f, "categoryId") {
		t.Errorf("fields %v, want categoryId", f)
	}
	r = a.must("PUT", "/bo/import/tags-categories/y", `{"id":"y","name":"Y","createdAt":"yesterday","updatedAt":"2026-11-20T09:01:12.250Z"}`, 422)
	if f := fields(t, r); !slices.Contains(f, "createdAt") {
		t.Errorf("fields %v, want createdAt", f)
	}
}

// TestImportNameClashIsImportConflict: a category or tag whose id is free
// but whose name is taken is 409 import_conflict (what `doclib import
// -merge` keeps and goes on), not the conflict of a create.
func TestImportNameClashIsImportConflict(t *testing.T) {
	a := newAPI(t)
	a.must("PUT", "/bo/import/tags-categories/health",
		`{"id":"health","name":"Santé","createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-21T10:00:00.000Z"}`, 201)
	a.must("PUT", "/bo/import/tags/vax",
		`{"id":"vax","name":"Vaccins","categoryId":"health","createdAt":"2026-11-20T09:01:12.250Z","updatedAt":"2026-11-20T09:01:12.250Z"}`, 201)
	for _, c := range []struct{ path, body string }{
		{"/bo/import/tags-categories/sante", `{"id":"sante","name":"Santé","createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-21T10:00:00.000Z"}`},
		{"/bo/import/tags/vaccins", `{"id":"vaccins","name":"Vaccins","categoryId":"health","createdAt":"2026-11-20T09:01:12.250Z","updatedAt":"2026-11-20T09:01:12.250Z"}`},
	} {
		var p problemBody
		a.must("PUT", c.path, c.body, 409).json(t, &p)
		if p.Code != "import_conflict" {
			t.Errorf("%s: code %q, want import_conflict", c.path, p.Code)
		}
	}
}
