package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// The editorial workflow through the gateway (issue 24): a draft never
// reaches the public listener until published, a stale If-Match is a 412
// that changes nothing, revisions record every write.
func TestEditorialThroughTheGateway(t *testing.T) {
	st := NewStack(t, nil)
	var d struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Version int64  `json:"version"`
	}
	st.Must("POST", "/bo/documents", `{"type":"LINK","title":"Brouillon","url":"https://example.org/b","status":"draft"}`, 201).JSON(t, &d)
	if d.Status != "draft" {
		t.Fatalf("created %+v, want a draft", d)
	}
	if r := st.Req("GET", "/public/documents/"+d.ID+"/detail", nil); r.Status != 404 {
		t.Errorf("public detail of a draft = %d", r.Status)
	}
	if r := st.Req("GET", "/public/documents", nil, "Cache-Control", "no-cache"); strings.Contains(string(r.Body), d.ID) {
		t.Errorf("public listing shows the draft: %s", r.Body)
	}
	etag := st.BO("GET", "/bo/documents/"+d.ID+"/detail", nil).Header.Get("ETag")
	st.Must("POST", "/bo/documents/"+d.ID+"/publish", nil, 200)
	r := st.BO("PATCH", "/bo/documents/"+d.ID, `{"type":"LINK","title":"Écrasé","url":"https://example.org/b"}`, "If-Match", etag)
	if r.Status != 412 || r.Problem(t).Code != "precondition_failed" {
		t.Errorf("PATCH with a stale If-Match = %d %s", r.Status, r.Body)
	}
	if r := st.Req("GET", "/public/documents/"+d.ID+"/detail", nil, "Cache-Control", "no-cache"); r.Status != 200 || !strings.Contains(string(r.Body), "Brouillon") {
		t.Errorf("public detail after publication = %d %s", r.Status, r.Body)
	}
	var page struct {
		Revisions []struct {
			Version int64  `json:"version"`
			Why     string `json:"why"`
		} `json:"revisions"`
	}
	st.Must("GET", "/bo/documents/"+d.ID+"/revisions", nil, 200).JSON(t, &page)
	if got := fmt.Sprint(page.Revisions); got != "[{2 POST /bo/documents/:id/publish} {1 POST /bo/documents}]" {
		t.Errorf("revisions %s", got)
	}
}
