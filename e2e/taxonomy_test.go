package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestTaxonomyThroughTheGateway walks every tag and category route of the
// base document through the gateway, with good and bad input.
func TestTaxonomyThroughTheGateway(t *testing.T) {
	st := NewStack(t, nil)

	// Back-office routes need the token.
	for _, auth := range []string{"", "Bearer wrong", "Basic " + Token, Token} {
		r := st.Req("GET", "/bo/tags-categories", nil, "Authorization", auth)
		if r.Status != 401 || r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: status %d, WWW-Authenticate %q; want 401 with the header", auth, r.Status, r.Header.Get("WWW-Authenticate"))
		}
		if p := r.Problem(t); p.Code != "unauthorized" {
			t.Errorf("code = %s", p.Code)
		}
	}
	if r := st.Req("POST", "/bo/tags-categories", `{"id":"x","name":"x"}`); r.Status != 401 {
		t.Errorf("unauthenticated write: %d", r.Status)
	}

	r := st.Must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	if r.Header.Get("Location") != "/bo/tags-categories/health" {
		t.Errorf("Location = %q", r.Header.Get("Location"))
	}
	st.Must("POST", "/bo/tags-categories", `{"id":"audience","name":"Audience"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"vaccines","name":"Vaccins","categoryId":"health"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"kids","name":"Enfants","categoryId":"audience"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"adults","name":"Adultes","categoryId":"audience"}`, 201)

	pub := st.Req("GET", "/public/tags-categories", nil)
	want := `[{"id":"health","name":"Santé","tags":[{"id":"vaccines","name":"Vaccins","categoryId":"health"}]},` +
		`{"id":"audience","name":"Audience","tags":[{"id":"kids","name":"Enfants","categoryId":"audience"},{"id":"adults","name":"Adultes","categoryId":"audience"}]}]`
	if pub.Status != 200 || string(pub.Body) != want {
		t.Errorf("public listing %d\n got %s\nwant %s", pub.Status, pub.Body, want)
	}
	var admin []struct {
		ID, Name             string
		CreatedAt, UpdatedAt string
		Tags                 []struct{ ID, CreatedAt string }
	}
	st.Must("GET", "/bo/tags-categories", nil, 200).JSON(t, &admin)
	if len(admin) != 2 || admin[0].CreatedAt == "" || admin[1].Tags[0].CreatedAt == "" {
		t.Errorf("admin listing = %+v", admin)
	}

	var renamed struct{ Name, UpdatedAt, CreatedAt string }
	st.Must("PATCH", "/bo/tags-categories/audience", `{"name":"Public cible"}`, 200).JSON(t, &renamed)
	if renamed.Name != "Public cible" || renamed.UpdatedAt < renamed.CreatedAt {
		t.Errorf("renamed category = %+v", renamed)
	}
	st.Must("PATCH", "/bo/tags/kids", `{"name":"Jeunes"}`, 200)

	bad := []struct {
		name, method, path, body string
		status                   int
		code, fields             string
	}{
		{"malformed JSON", "POST", "/bo/tags", `{"id":"a",`, 400, "bad_request", ""},
		{"wrong types", "POST", "/bo/tags", `{"id":["a"],"name":{},"categoryId":"health"}`, 400, "bad_request", "id,name"},
		{"too long and bad id", "POST", "/bo/tags", `{"id":"_x","name":"` + strings.Repeat("n", 101) + `","categoryId":"health"}`, 422, "validation_failed", "id,name"},
		{"unknown category", "POST", "/bo/tags", `{"id":"t","name":"T","categoryId":"nowhere"}`, 422, "validation_failed", "categoryId"},
		{"duplicate category id", "POST", "/bo/tags-categories", `{"id":"health","name":"Other"}`, 409, "conflict", "id"},
		{"duplicate category name", "POST", "/bo/tags-categories", `{"id":"other","name":"SANTÉ"}`, 409, "conflict", "name"},
		{"duplicate tag name in category", "POST", "/bo/tags", `{"id":"v2","name":"vaccins","categoryId":"health"}`, 409, "conflict", "name"},
		{"duplicate tag id", "POST", "/bo/tags", `{"id":"kids","name":"Autre","categoryId":"health"}`, 409, "conflict", "id"},
		{"rename unknown category", "PATCH", "/bo/tags-categories/nowhere", `{"name":"x"}`, 404, "not_found", ""},
		{"rename unknown tag", "PATCH", "/bo/tags/nowhere", `{"name":"x"}`, 404, "not_found", ""},
		{"rename to empty", "PATCH", "/bo/tags/kids", `{"name":"  "}`, 422, "validation_failed", "name"},
		{"delete unknown tag", "DELETE", "/bo/tags/nowhere", "", 404, "not_found", ""},
		{"delete unknown category", "DELETE", "/bo/tags-categories/nowhere", "", 404, "not_found", ""},
		{"unknown route", "GET", "/bo/tags", "", 405, "method_not_allowed", ""},
		{"unknown path", "GET", "/public/nothing", "", 404, "not_found", ""},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			r := st.BO(tt.method, tt.path, body)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d; body %s", r.Status, tt.status, r.Body)
			}
			p := r.Problem(t)
			if p.Code != tt.code || (tt.fields != "" && p.Fields() != tt.fields) {
				t.Errorf("problem = %+v, want code %s fields %s", p, tt.code, tt.fields)
			}
		})
	}
	r = st.BO("POST", "/bo/tags", `{"id":"a","name":"b","categoryId":"health"}`, "Content-Type", "text/plain")
	if r.Status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %d, want 415", r.Status)
	}
	r = st.BO("POST", "/bo/tags", `{"id":"a","name":"`+strings.Repeat("x", 3<<20)+`"}`)
	if r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("3 MiB body: %d, want 413", r.Status)
	}
	if got := st.Req("GET", "/public/tags-categories", nil); strings.Count(string(got.Body), `"id"`) != 5 {
		t.Errorf("bad requests changed something: %s", got.Body)
	}

	// Deleting a category deletes its tags.
	st.Must("DELETE", "/bo/tags/vaccines", nil, 204)
	st.Must("DELETE", "/bo/tags-categories/audience", nil, 204)
	st.Must("DELETE", "/bo/tags-categories/audience", nil, 404)
	pub = st.Req("GET", "/public/tags-categories", nil)
	if string(pub.Body) != `[{"id":"health","name":"Santé","tags":[]}]` {
		t.Errorf("after deletes: %s", pub.Body)
	}
	st.Must("PATCH", "/bo/tags/kids", `{"name":"x"}`, 404)
	// Ids and names are free again at once.
	st.Must("POST", "/bo/tags-categories", `{"id":"audience","name":"Audience"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"kids","name":"Enfants","categoryId":"audience"}`, 201)
}
