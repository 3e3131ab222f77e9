package e2e

import (
	"bytes"
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

// What a draft uses is seen nowhere on the public side (issue 24): its PDF
// and images are in no public answer (listing, sync, detail, download),
// pending changes' images neither, while the back-office counts them as
// uses (deleting the media is 409). A media record stays readable by its
// id, as every media is: the public side never says which documents use a
// media.
func TestADraftsMediaAppearsInNoPublicAnswer(t *testing.T) {
	st := NewStack(t, nil)
	pdf := st.Upload("brouillon.pdf", pdfBytes)
	png := st.Upload("schema.png", pngBytes)
	pending := st.Upload("nouveau.png", append(append([]byte(nil), pngBytes...), 1)) // other bytes: the same ones are one media
	var draft, live struct{ ID string }
	st.Must("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "Brouillon PDF", "fileId": pdf, "tagsIds": []string{}, "status": "draft"}, 201).JSON(t, &draft)
	st.Must("POST", "/bo/documents", map[string]any{"type": "MARKDOWN", "title": "En ligne", "content": "# Texte", "imagesIds": []string{png}, "tagsIds": []string{}}, 201).JSON(t, &live)
	st.Must("PATCH", "/bo/documents/"+live.ID, map[string]any{"type": "MARKDOWN", "title": "En ligne", "content": "# Texte", "imagesIds": []string{png, pending}, "tagsIds": []string{}, "draft": true}, 200)

	public := map[string]Response{
		"listing": st.Req("GET", "/public/documents", nil, "Cache-Control", "no-cache", "Accept-Encoding", "identity"),
		"sync":    st.Req("GET", "/public/sync", nil, "Accept-Encoding", "identity"),
		"detail":  st.Req("GET", "/public/documents/"+live.ID+"/detail", nil, "Accept-Encoding", "identity"),
	}
	for name, r := range public {
		if r.Status != 200 {
			t.Fatalf("public %s = %d %s", name, r.Status, r.Body)
		}
		for what, id := range map[string]string{"the draft": draft.ID, "the draft's PDF": pdf, "the pending image": pending} {
			if strings.Contains(string(r.Body), id) {
				t.Errorf("public %s shows %s (%s): %s", name, what, id, r.Body)
			}
		}
	}
	for _, path := range []string{"/public/documents/" + draft.ID + "/detail", "/public/documents/" + draft.ID + "/download"} {
		if r := st.Req("GET", path, nil); r.Status != 404 {
			t.Errorf("GET %s = %d, want 404", path, r.Status)
		}
	}
	for _, id := range []string{pdf, pending} {
		if r := st.BO("DELETE", "/bo/medias/"+id, nil); r.Status != 409 || r.Problem(t).Code != "media_in_use" {
			t.Errorf("DELETE a media only a draft or pending changes use = %d %s, want 409 media_in_use", r.Status, r.Body)
		}
	}
	st.Must("POST", "/bo/documents/"+draft.ID+"/publish", nil, 200)
	if r := st.Req("GET", "/public/documents/"+draft.ID+"/download", nil); r.Status != 200 || !bytes.Equal(r.Body, pdfBytes) {
		t.Errorf("download once published = %d (%d bytes)", r.Status, len(r.Body))
	}
}
