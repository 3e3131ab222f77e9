package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// TestMediaMetadataThroughTheGateway (CONTRACT.md §10): a media record
// carries the SHA-256 of its bytes and an image its size; the same bytes
// uploaded again (also by identical uploads racing) give the one media, 200
// with its Location; an image whose header is cut short is a 422 that
// changes nothing.
func TestMediaMetadataThroughTheGateway(t *testing.T) {
	st := NewStack(t, nil)
	first := st.PostFile("schema.png", pngBytes)
	var m map[string]any
	first.JSON(t, &m)
	sum := sha256.Sum256(pngBytes)
	if first.Status != http.StatusCreated || m["sha256"] != hex.EncodeToString(sum[:]) || m["width"] != float64(1) || m["height"] != float64(1) {
		t.Fatalf("upload of a 1×1 PNG: %d %v", first.Status, m)
	}
	id := m["id"].(string)
	var pub map[string]any
	st.Req("GET", "/public/medias/"+id, nil).JSON(t, &pub)
	if pub["sha256"] != m["sha256"] || pub["width"] != float64(1) || pub["height"] != float64(1) {
		t.Errorf("public record %v, want sha256, width and height", pub)
	}

	again := st.PostFile("copy.png", pngBytes)
	var m2 map[string]any
	again.JSON(t, &m2)
	if again.Status != http.StatusOK || m2["id"] != id || again.Header.Get("Location") != "/bo/medias/"+id {
		t.Errorf("the same bytes again: %d %v Location %q, want 200 with media %s", again.Status, m2, again.Header.Get("Location"), id)
	}

	// Identical uploads racing: one media in the end.
	content := unique(pdfBytes, "raced")
	var wg sync.WaitGroup
	answers := make([]Response, 8)
	for i := range answers {
		wg.Go(func() { answers[i] = st.PostFile(fmt.Sprintf("r%d.pdf", i), content) })
	}
	wg.Wait()
	created, ids := 0, map[any]bool{}
	for _, r := range answers {
		var x map[string]any
		r.JSON(t, &x)
		if r.Status == http.StatusCreated {
			created++
		} else if r.Status != http.StatusOK {
			t.Fatalf("racing upload: %d %s", r.Status, r.Body)
		}
		ids[x["id"]] = true
	}
	if created != 1 || len(ids) != 1 {
		t.Errorf("8 identical uploads racing: %d answered 201, %d media; want 1 and 1", created, len(ids))
	}

	bad := st.PostFile("cut.png", pngBytes[:20])
	if p := bad.Problem(t); bad.Status != http.StatusUnprocessableEntity || p.Fields() != "file" {
		t.Errorf("a PNG cut inside its header: %d %+v, want 422 naming file", bad.Status, p)
	}
	var list []any
	st.Must("GET", "/bo/medias", nil, 200).JSON(t, &list)
	if len(list) != 2 {
		t.Errorf("%d media, want 2 (the PNG and the raced PDF)", len(list))
	}
}
