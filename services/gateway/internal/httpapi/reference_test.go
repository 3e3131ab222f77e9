package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/doclib/api"
	"github.com/doclib/services/gateway/internal/reference"
)

// TestReferenceServed checks /openapi.json, /openapi.yaml and /docs on both
// listeners: the embedded document, conditional, and the page's assets
// from the gateway itself.
func TestReferenceServed(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	wantJSON, err := api.JSON()
	if err != nil {
		t.Fatal(err)
	}
	files := []struct {
		path, contentType string
		body              []byte
	}{
		{"/openapi.json", "application/json; charset=utf-8", wantJSON},
		{"/openapi.yaml", "application/yaml; charset=utf-8", api.YAML()},
		{"/docs", "text/html; charset=utf-8", nil},
		{"/docs/docs.js", "text/javascript; charset=utf-8", nil},
		{"/docs/assets/swagger-ui-bundle.js", "text/javascript; charset=utf-8", nil},
		{"/docs/assets/swagger-ui.css", "text/css; charset=utf-8", nil},
	}
	for _, base := range []string{h.publicURL, h.url} {
		for _, f := range files {
			res := send(t, base, "GET", f.path, "Accept-Encoding", "identity")
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != f.contentType {
				t.Fatalf("GET %s: %d %q, want 200 %q", f.path, res.StatusCode, res.Header.Get("Content-Type"), f.contentType)
			}
			if f.body != nil && !bytes.Equal(body, f.body) {
				t.Errorf("GET %s: not the embedded document", f.path)
			}
			etag := res.Header.Get("ETag")
			if etag == "" {
				t.Fatalf("GET %s: no ETag", f.path)
			}
			res = send(t, base, "GET", f.path, "If-None-Match", etag, "Cache-Control", "no-cache", "Accept-Encoding", "identity")
			if res.StatusCode != http.StatusNotModified {
				t.Errorf("GET %s If-None-Match: %d, want 304", f.path, res.StatusCode)
			}
			res = send(t, base, "HEAD", f.path, "Accept-Encoding", "identity")
			if res.StatusCode != 200 || res.Header.Get("ETag") != etag {
				t.Errorf("HEAD %s: %d ETag %q, want 200 and %s", f.path, res.StatusCode, res.Header.Get("ETag"), etag)
			}
		}
		page := send(t, base, "GET", "/docs")
		if page.Header.Get("Content-Security-Policy") != reference.PageSecurity {
			t.Errorf("/docs Content-Security-Policy = %q", page.Header.Get("Content-Security-Policy"))
		}
		html, _ := io.ReadAll(page.Body)
		for _, ref := range []string{`src="/docs/assets/swagger-ui-bundle.js"`, `href="/docs/assets/swagger-ui.css"`, `src="/docs/docs.js"`} {
			if !strings.Contains(string(html), ref) {
				t.Errorf("/docs does not load %s", ref)
			}
		}
		if strings.Contains(string(html), "//") && strings.Contains(string(html), "http") {
			t.Errorf("/docs names another origin:\n%s", html)
		}
		res := send(t, base, "GET", "/openapi.json", "Accept-Encoding", "gzip")
		if res.Header.Get("Content-Encoding") != "gzip" {
			t.Errorf("/openapi.json is not compressed for a client that accepts gzip")
		}
	}
}

// TestNoFavicon: a browser opening /docs asks for /favicon.ico; the answer
// is an empty 204 a browser keeps for a day, not a 404 logged per view.
func TestNoFavicon(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	for _, base := range []string{h.publicURL, h.url} {
		res := send(t, base, "GET", "/favicon.ico")
		if res.StatusCode != http.StatusNoContent || res.Header.Get("Cache-Control") != "public, max-age=86400" {
			t.Errorf("GET %s/favicon.ico: %d, Cache-Control %q; want 204 kept a day", base, res.StatusCode, res.Header.Get("Cache-Control"))
		}
	}
}
