package proxy

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// TestRenditionQueryAndAccept: a media download's rendition parameters
// (the query) and Accept reach the media service as sent, and its Vary,
// ETag and Cache-Control come back, so that caches after the gateway keep
// one answer per query and Accept (the gateway's micro-cache keeps no
// download: route.MicroCached).
func TestRenditionQueryAndAccept(t *testing.T) {
	t.Parallel()
	var gotQuery, gotAccept string
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotQuery, gotAccept = r.URL.RawQuery, r.Header.Get("Accept")
		w.Header().Set("Vary", "Accept")
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		w.Header().Set("Content-Type", "image/webp")
		_, _ = w.Write([]byte("RIFF"))
	}))
	t.Cleanup(media.Close)
	target, _ := url.Parse(media.URL)
	p := New("media", target, NewTransport(5*time.Second), slog.New(slog.DiscardHandler))
	req := httptest.NewRequest(http.MethodGet, "/public/medias/x/download?preset=thumb&format=auto&q=70", nil)
	req.Header.Set("Accept", "image/avif,image/webp,*/*")
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, req)
	if gotQuery != "preset=thumb&format=auto&q=70" || gotAccept != "image/avif,image/webp,*/*" {
		t.Errorf("media got query %q and Accept %q", gotQuery, gotAccept)
	}
	if rec.Header().Get("Vary") != "Accept" || rec.Header().Get("ETag") != `"abc"` ||
		rec.Header().Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Errorf("answer headers %v, want Vary, ETag and Cache-Control as the media service sent them", rec.Header())
	}
}
