package e2e

import (
	"testing"
)

// TestOpenAPIConformance drives every operation of api/openapi.yaml through
// a running stack, to a success and to an error, and validates every answer
// against the document (Contract): status, headers and body. The document
// can then no longer say one thing while the services do another. A route
// added to the document without calls here fails the coverage check at the
// end, naming it; add a success and an error below.
func TestOpenAPIConformance(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	st.Check = NewContract(t)
	viewer := []string{"Authorization", "Bearer " + ViewerToken}
	noToken := []string{"Authorization", ""}
	call := func(method, path string, body any, want int, headers ...string) Response {
		t.Helper()
		var r Response
		if len(path) > 3 && path[:4] == "/bo/" && !hasAuth(headers) {
			r = st.BO(method, path, body, headers...)
		} else {
			r = st.Req(method, path, body, headers...)
		}
		if r.Status != want {
			t.Errorf("%s %s: %d, want %d; body %.300s", method, path, r.Status, want, r.Body)
		}
		return r
	}
	etagOf := func(method, path string) string {
		t.Helper()
		r := call(method, path, nil, 200)
		return r.Header.Get("ETag")
	}
	getAll := func(path string, want int, headers ...string) { // GET and HEAD
		t.Helper()
		call("GET", path, nil, want, headers...)
		call("HEAD", path, nil, want, headers...)
	}

	// The gateway's own routes.
	for _, p := range []string{"/healthz", "/readyz", "/openapi.json", "/openapi.yaml", "/docs"} {
		getAll(p, 200)
	}
	for _, m := range []string{"GET", "HEAD"} {
		if r := st.ReqAt(st.AdminURL, m, "/metrics", nil); r.Status != 200 {
			t.Errorf("%s /metrics on the admin listener: %d", m, r.Status)
		}
	}
	getAll("/metrics", 404) // not on the public listener
	for _, p := range []string{"/openapi.json", "/openapi.yaml", "/docs"} {
		call("GET", p, nil, 304, "If-None-Match", etagOf("GET", p))
	}

	// Who the caller is (the gateway answers it).
	getAll("/bo/me", 200)
	getAll("/bo/me", 200, viewer...)
	getAll("/bo/me", 401, noToken...)

	// The live streams (the gateway serves them): their opening, then what
	// is refused before a stream starts.
	st.checkStreamStart(t, st.URL, "/public/changes")
	st.checkStreamStart(t, st.AdminURL, "/bo/changes", "Authorization", "Bearer "+ViewerToken)
	call("HEAD", "/public/changes", nil, 200)
	call("HEAD", "/bo/changes", nil, 200, viewer...)
	getAll("/public/changes", 400, "Last-Event-ID", "yesterday")
	getAll("/bo/changes", 401, noToken...)

	// Taxonomy.
	call("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	call("POST", "/bo/tags-categories", `{"id":"audience","name":"Audience"}`, 201)
	call("POST", "/bo/tags-categories", `{"id":"health","name":"Other"}`, 409)
	call("POST", "/bo/tags-categories", `{"id":"","name":""}`, 422)
	call("POST", "/bo/tags-categories", `{"id":"x","name":"X"}`, 403, viewer...)
	call("POST", "/bo/tags", `{"id":"vaccines","name":"Vaccins","categoryId":"health"}`, 201)
	call("POST", "/bo/tags", `{"id":"kids","name":"Enfants","categoryId":"audience"}`, 201)
	call("POST", "/bo/tags", `{"id":"x","name":"X","categoryId":"nope"}`, 422)
	call("PATCH", "/bo/tags-categories/audience", `{"name":"Public cible"}`, 200)
	call("PATCH", "/bo/tags-categories/nope", `{"name":"X"}`, 404)
	call("PATCH", "/bo/tags/kids", `{"name":"Jeunes"}`, 200)
	call("PATCH", "/bo/tags/nope", `{"name":"X"}`, 404)
	getAll("/bo/tags-categories", 200)
	getAll("/bo/tags-categories", 401, noToken...)
	getAll("/public/tags-categories", 200)
	call("GET", "/public/tags-categories", nil, 304, "If-None-Match", etagOf("GET", "/public/tags-categories"))

	// Public settings.
	getAll("/public/config", 200)
	call("GET", "/public/config", nil, 304, "If-None-Match", etagOf("GET", "/public/config"))
	getAll("/bo/config", 200)
	getAll("/bo/config", 401, noToken...)
	call("PUT", "/bo/config", `{"moderatorEmail":"mod@example.org"}`, 200)
	call("PUT", "/bo/config", `{"moderatorEmail":"not an address"}`, 422)
	call("PUT", "/bo/config", `{"moderatorEmail":"mod@example.org"}`, 403, viewer...)

	// Media.
	pdf := st.Upload("guide.pdf", pdfBytes)
	png := st.Upload("schema.png", pngBytes)
	spare := st.Upload("spare.png", append(append([]byte{}, pngBytes...), 's'))
	if again := st.PostFile("again.pdf", pdfBytes); again.Status != 200 { // the same bytes: the same media
		t.Errorf("uploading the same bytes again: %d, want 200", again.Status)
	}
	call("POST", "/bo/medias", "not multipart", 415)
	getAll("/bo/medias", 200)
	getAll("/bo/medias", 401, noToken...)
	getAll("/bo/medias/"+pdf, 200)
	getAll("/bo/medias/nope", 404)
	getAll("/bo/medias/"+pdf+"/download", 200)
	call("GET", "/bo/medias/"+pdf+"/download", nil, 206, "Range", "bytes=0-7")
	getAll("/bo/medias/nope/download", 404)
	getAll("/public/medias/"+png, 200)
	getAll("/public/medias/nope", 404)
	getAll("/public/medias/"+png+"/download", 200)
	call("GET", "/public/medias/"+png+"/download", nil, 416, "Range", "bytes=100000-")
	getAll("/public/medias/nope/download", 404)
	getAll("/public/medias/"+st.Upload("pages.pdf", pdfOfPages(2))+"/text", 200)
	getAll("/public/medias/"+pdf+"/text", 422) // not a readable PDF
	getAll("/public/medias/nope/text", 404)

	// Documents.
	var link, md, file struct{ ID string }
	call("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Site", "url": "https://example.org", "tagsIds": []string{"vaccines"}}, 201).JSON(t, &link)
	call("POST", "/bo/documents", map[string]any{"type": "MARKDOWN", "title": "Fiche", "content": "# Fiche", "sources": []string{"OMS"}, "imagesIds": []string{png}}, 201).JSON(t, &md)
	call("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "Guide", "fileId": pdf, "tagsIds": []string{"kids"}}, 201).JSON(t, &file)
	call("POST", "/bo/documents", map[string]any{"type": "HTML", "title": "Page", "content": "<p>Bonjour</p>"}, 201)
	call("POST", "/bo/documents", `{"type":"LINK","title":"","url":"javascript:alert(1)"}`, 422)
	call("POST", "/bo/documents", `{"type":`, 400)
	call("PATCH", "/bo/documents/"+link.ID, map[string]any{"type": "LINK", "title": "Site v2", "url": "https://example.org/v2"}, 200)
	call("PATCH", "/bo/documents/"+link.ID, map[string]any{"type": "MARKDOWN", "title": "T", "content": "x"}, 422)
	call("PATCH", "/bo/documents/nope", map[string]any{"type": "LINK", "title": "T", "url": "https://example.org"}, 404)
	getAll("/bo/documents", 200)
	getAll("/bo/documents", 401, noToken...)
	getAll("/bo/documents/"+md.ID+"/detail", 200)
	getAll("/bo/documents/nope/detail", 404)
	getAll("/bo/documents/"+md.ID+"/download", 200)
	getAll("/bo/documents/"+link.ID+"/download", 404) // no_file
	var page struct {
		Cursor string `json:"cursor"`
	}
	call("GET", "/public/sync", nil, 200).JSON(t, &page)
	call("HEAD", "/public/sync", nil, 200)
	getAll("/public/sync?cursor="+page.Cursor, 200)
	getAll("/public/sync?cursor=not-a-cursor", 400)
	getAll("/public/bundle", 200, "Accept-Encoding", "identity")
	getAll("/public/bundle?tags=kids", 200, "Accept-Encoding", "identity")
	getAll("/public/bundle?tags=,", 400)
	getAll("/public/documents/"+md.ID+"/text", 200)
	getAll("/public/documents/"+link.ID+"/text", 404) // no_text
	getAll("/public/documents", 200)
	call("GET", "/public/documents", nil, 304, "If-None-Match", etagOf("GET", "/public/documents"))
	getAll("/public/documents/"+file.ID+"/detail", 200)
	getAll("/public/documents/nope/detail", 404)
	getAll("/public/documents/"+file.ID+"/download", 200)
	call("GET", "/public/documents/"+file.ID+"/download", nil, 206, "Range", "bytes=0-7")
	getAll("/public/documents/"+link.ID+"/download", 404)

	// The editorial workflow (issue 24).
	var draft struct{ ID string }
	call("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Brouillon", "url": "https://example.org/b", "status": "draft"}, 201).JSON(t, &draft)
	getAll("/public/documents/"+draft.ID+"/detail", 404)
	call("POST", "/bo/documents/"+draft.ID+"/publish", nil, 200)
	call("POST", "/bo/documents/"+draft.ID+"/publish", nil, 409) // nothing to publish
	call("POST", "/bo/documents/nope/publish", nil, 404)
	call("PATCH", "/bo/documents/"+draft.ID, map[string]any{"type": "LINK", "title": "Brouillon v2", "url": "https://example.org/b", "draft": true}, 200)
	call("DELETE", "/bo/documents/"+draft.ID+"/draft", nil, 200)
	call("DELETE", "/bo/documents/"+draft.ID+"/draft", nil, 409) // no pending changes
	call("POST", "/bo/documents/"+draft.ID+"/unpublish", nil, 200)
	call("POST", "/bo/documents/"+draft.ID+"/unpublish", nil, 409) // a draft already
	getAll("/bo/documents/"+draft.ID+"/revisions", 200)
	getAll("/bo/documents/nope/revisions", 404)
	getAll("/bo/documents/"+draft.ID+"/revisions/1", 200)
	getAll("/bo/documents/"+draft.ID+"/revisions/999", 404)
	call("POST", "/bo/documents/"+draft.ID+"/revisions/1/restore", nil, 200)
	call("POST", "/bo/documents/"+draft.ID+"/revisions/999/restore", nil, 404)
	call("POST", "/bo/documents/preview", map[string]any{"type": "MARKDOWN", "content": "# Hi\n\n[x](javascript:alert(1))"}, 200)
	call("POST", "/bo/documents/preview", map[string]any{"type": "LINK", "content": "x"}, 422)
	// It changes nothing, so a viewer may preview too (a deliberate exception to "viewers read").
	call("POST", "/bo/documents/preview", map[string]any{"type": "HTML", "content": "<p>x</p>"}, 200, viewer...)

	// Deletions and restore.
	call("DELETE", "/bo/medias/"+pdf, nil, 409) // used by a live document
	call("DELETE", "/bo/medias/"+spare, nil, 204)
	call("DELETE", "/bo/medias/"+spare, nil, 404)
	call("DELETE", "/bo/documents/"+link.ID, nil, 204)
	call("DELETE", "/bo/documents/"+link.ID, nil, 204) // idempotent
	call("DELETE", "/bo/documents/"+link.ID, nil, 403, viewer...)
	call("PATCH", "/bo/documents/"+link.ID, map[string]any{"type": "LINK", "title": "T", "url": "https://example.org"}, 409)
	getAll("/public/documents/"+link.ID+"/detail", 404)
	call("POST", "/bo/documents/"+link.ID+"/restore", nil, 200)
	call("POST", "/bo/documents/nope/restore", nil, 404)
	call("DELETE", "/bo/tags/kids", nil, 204)
	call("DELETE", "/bo/tags/kids", nil, 404)
	call("DELETE", "/bo/tags-categories/audience", nil, 204)
	call("DELETE", "/bo/tags-categories/audience", nil, 404)

	// Webhooks.
	rc := newHookReceiver(t, nil)
	var sub struct{ ID string }
	call("POST", "/bo/webhooks", map[string]any{"url": rc.srv.URL, "eventTypes": []string{"tag.*"}}, 201).JSON(t, &sub)
	call("POST", "/bo/webhooks", map[string]any{"url": "nope", "eventTypes": []string{"x"}}, 422)
	getAll("/bo/webhooks", 200)
	getAll("/bo/webhooks", 401, noToken...)
	getAll("/bo/webhooks/"+sub.ID, 200)
	getAll("/bo/webhooks/nope", 404)
	call("PATCH", "/bo/webhooks/"+sub.ID, `{"description":"CDN"}`, 200)
	call("PATCH", "/bo/webhooks/nope", `{"description":"CDN"}`, 404)
	call("POST", "/bo/webhooks/"+sub.ID+"/rotate-secret", nil, 200)
	call("POST", "/bo/webhooks/nope/rotate-secret", nil, 404)
	var ping struct{ ID string }
	call("POST", "/bo/webhooks/"+sub.ID+"/ping", nil, 200).JSON(t, &ping)
	call("POST", "/bo/webhooks/nope/ping", nil, 404)
	getAll("/bo/webhooks/"+sub.ID+"/deliveries", 200)
	getAll("/bo/webhooks/nope/deliveries", 404)
	call("POST", "/bo/webhooks/"+sub.ID+"/deliveries/"+ping.ID+"/retry", nil, 202)
	call("POST", "/bo/webhooks/"+sub.ID+"/deliveries/nope/retry", nil, 404)
	getAll("/bo/webhook-event-types", 200)
	getAll("/bo/webhook-event-types", 401, noToken...)
	call("DELETE", "/bo/webhooks/"+sub.ID, nil, 204)
	call("DELETE", "/bo/webhooks/"+sub.ID, nil, 404)

	importRoutes(t, call)

	// What only an outage can fail: the services behind the gateway stopped.
	for _, s := range []string{"taxonomy", "catalog", "media"} {
		st.Stop(s)
	}
	getAll("/public/documents", 502)
	getAll("/public/tags-categories", 502)
	getAll("/public/config", 502)
	call("GET", "/openapi.json", nil, 200) // the gateway's own routes still answer

	st.Check.RequireCoverage(t, map[string]string{
		"GET /healthz":       "no error to provoke: the process answers or does not",
		"HEAD /healthz":      "no error to provoke: the process answers or does not",
		"GET /readyz":        "503 only while draining at shutdown",
		"HEAD /readyz":       "503 only while draining at shutdown",
		"GET /openapi.json":  "no error to provoke: embedded at build time",
		"HEAD /openapi.json": "no error to provoke: embedded at build time",
		"GET /openapi.yaml":  "no error to provoke: embedded at build time",
		"HEAD /openapi.yaml": "no error to provoke: embedded at build time",
		"GET /docs":          "503 only in a build without the vendored renderer",
		"HEAD /docs":         "503 only in a build without the vendored renderer",
	})
}

func hasAuth(headers []string) bool {
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Authorization" {
			return true
		}
	}
	return false
}
