package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"testing"
)

// Every GET through the gateway, public and back-office, JSON and
// downloads (CONTRACT.md §7): a strong ETag and 304 for it (also with
// Cache-Control: no-cache), HEAD with the same headers and no body; JSON
// with its Cache-Control and Vary, compressed from 1 KiB with an ETag of
// its own that is honoured too; downloads never compressed.
func TestEveryGetIsConditionalCompressedAndHasHead(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	for i := 0; i < 20; i++ { // enough tags for categories of more than 1 KiB
		st.Must("POST", "/bo/tags", fmt.Sprintf(`{"id":"tag-%d","name":"Une étiquette n°%d","categoryId":"health"}`, i, i), 201)
	}
	pdf := st.Upload("guide.pdf", pdfBytes)
	var md, file struct{ ID string }
	st.Must("POST", "/bo/documents", map[string]any{"type": "MARKDOWN", "title": "Fiche", "tagsIds": []string{"tag-1"},
		"content": "# Fiche\n\n" + strings.Repeat("Un paragraphe assez long pour dépasser un kibioctet. ", 40)}, 201).JSON(t, &md)
	st.Must("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "Guide", "tagsIds": []string{}, "fileId": pdf}, 201).JSON(t, &file)

	tests := []struct {
		path     string
		json     bool
		compress bool // big enough to be compressed
	}{
		{"/public/tags-categories", true, true},
		{"/bo/tags-categories", true, true},
		{"/public/documents", true, false},
		{"/bo/documents", true, false},
		{"/public/documents/" + md.ID + "/detail", true, true},
		{"/bo/documents/" + md.ID + "/detail", true, true},
		{"/public/documents/" + file.ID + "/detail", true, false},
		{"/public/medias/" + pdf, true, false},
		{"/bo/medias/" + pdf, true, false},
		{"/bo/medias", true, false},
		{"/public/documents/" + md.ID + "/download", false, false},
		{"/bo/documents/" + md.ID + "/download", false, false},
		{"/public/documents/" + file.ID + "/download", false, false},
		{"/bo/documents/" + file.ID + "/download", false, false},
		{"/public/medias/" + pdf + "/download", false, false},
		{"/bo/medias/" + pdf + "/download", false, false},
	}
	for _, tt := range tests {
		bo := strings.HasPrefix(tt.path, "/bo/")
		get := func(method string, headers ...string) Response {
			t.Helper()
			if bo {
				return st.BO(method, tt.path, nil, headers...)
			}
			return st.Req(method, tt.path, nil, headers...)
		}
		plain := get("GET", "Accept-Encoding", "identity")
		etag := plain.Header.Get("ETag")
		if plain.Status != 200 || !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) {
			t.Errorf("GET %s: %d, ETag %q; want 200 with a strong ETag", tt.path, plain.Status, etag)
			continue
		}
		if r := get("GET", "If-None-Match", etag, "Cache-Control", "no-cache", "Accept-Encoding", "identity"); r.Status != 304 ||
			len(r.Body) != 0 || r.Header.Get("ETag") != etag {
			t.Errorf("GET %s If-None-Match its ETag, Cache-Control: no-cache: %d, ETag %q; want 304", tt.path, r.Status, r.Header.Get("ETag"))
		}
		head := get("HEAD", "Accept-Encoding", "identity")
		if head.Status != 200 || len(head.Body) != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes", tt.path, head.Status, len(head.Body))
		}
		for _, k := range []string{"ETag", "Content-Type", "Content-Length", "Cache-Control", "Vary", "Content-Disposition"} {
			if head.Header.Get(k) != plain.Header.Get(k) {
				t.Errorf("HEAD %s: %s = %q, GET had %q", tt.path, k, head.Header.Get(k), plain.Header.Get(k))
			}
		}
		gz := get("GET", "Accept-Encoding", "gzip")
		if !tt.json {
			if gz.Header.Get("Content-Encoding") != "" || !bytes.Equal(gz.Body, plain.Body) {
				t.Errorf("GET %s, gzip accepted: Content-Encoding %q; a download is never compressed", tt.path, gz.Header.Get("Content-Encoding"))
			}
			continue
		}
		wantCache := "no-cache"
		if bo {
			wantCache = "private, no-cache"
		}
		// Vary also names Origin (CORS), in the same line.
		if plain.Header.Get("Cache-Control") != wantCache || !strings.HasPrefix(plain.Header.Get("Vary"), "Accept-Encoding") {
			t.Errorf("GET %s: Cache-Control %q, Vary %q; want %q and Accept-Encoding", tt.path,
				plain.Header.Get("Cache-Control"), plain.Header.Get("Vary"), wantCache)
		}
		if (len(plain.Body) >= 1024) != tt.compress {
			t.Errorf("GET %s: %d bytes; the test expects it %s 1 KiB", tt.path, len(plain.Body), map[bool]string{true: "over", false: "under"}[tt.compress])
		}
		if !tt.compress {
			if gz.Header.Get("Content-Encoding") != "" || gz.Header.Get("ETag") != etag {
				t.Errorf("GET %s (%d bytes), gzip accepted: %v; want it sent as it is", tt.path, len(plain.Body), gz.Header)
			}
			continue
		}
		gzTag := strings.TrimSuffix(etag, `"`) + `-gzip"`
		if gz.Header.Get("Content-Encoding") != "gzip" || gz.Header.Get("ETag") != gzTag || !bytes.Equal(gunzip(t, gz.Body), plain.Body) {
			t.Errorf("GET %s, gzip accepted: %v; want gzip of the same body, ETag %s", tt.path, gz.Header, gzTag)
		}
		for _, inm := range []string{gzTag, etag} {
			if r := get("GET", "If-None-Match", inm, "Accept-Encoding", "gzip"); r.Status != 304 || r.Header.Get("ETag") != inm {
				t.Errorf("GET %s If-None-Match %s, gzip accepted: %d ETag %q; want 304 with that ETag", tt.path, inm, r.Status, r.Header.Get("ETag"))
			}
		}
		if br := get("GET", "Accept-Encoding", "br"); br.Header.Get("Content-Encoding") != "br" {
			t.Errorf("GET %s, br accepted: Content-Encoding %q", tt.path, br.Header.Get("Content-Encoding"))
		}
	}
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Errorf("not gzip: %v", err)
		return nil
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Errorf("gunzip: %v", err)
	}
	return out
}
