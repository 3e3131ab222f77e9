package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// TestPreviewsTakeTurns: while other previews hold the whole budget, a
// preview waits, then answers 503 with Retry-After and renders nothing; a
// request refused anyway (too long) is refused at once, not after a wait;
// with the queue full a preview is 503 at once; once the budget is free it
// renders.
func TestPreviewsTakeTurns(t *testing.T) {
	gin.SetMode(gin.TestMode)
	h := &Handler{previews: newPreviewSlots()}
	h.previews.wait = 50 * time.Millisecond
	engine := gin.New()
	engine.POST(PreviewPath, h.preview)
	ask := func(content string) (*httptest.ResponseRecorder, time.Duration) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, PreviewPath, strings.NewReader(`{"type":"MARKDOWN","content":"`+content+`"}`))
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		engine.ServeHTTP(rec, req)
		return rec, time.Since(start)
	}
	if err := h.previews.sem.Acquire(context.Background(), previewBytes); err != nil {
		t.Fatal(err)
	}
	if rec, _ := ask("# Hi"); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "other previews") {
		t.Errorf("a preview while the budget is taken: %d %q %s, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if rec, _ := ask(strings.Repeat("x", 1<<20+1)); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("a text over 1 MiB while the budget is taken: %d, want 422 (refused before any wait)", rec.Code)
	}
	h.previews.wait = 5 * time.Second
	h.previews.waiting.Store(previewQueue)
	if rec, took := ask("# Hi"); rec.Code != http.StatusServiceUnavailable || took > time.Second {
		t.Errorf("a preview with the queue full: %d after %v, want 503 at once", rec.Code, took)
	}
	h.previews.waiting.Store(0)
	h.previews.give(previewBytes)
	if rec, _ := ask("# Hi"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `\u003ch1\u003eHi`) {
		t.Errorf("a preview once the budget is free: %d %s", rec.Code, rec.Body)
	}
}

// TestAPreviewTooDenseInMarkupIsRefusedAtOnce: Markdown whose reading
// grows with the square of its length (emphasis or link openers that never
// pair up, 600 KB of them) is a 422 naming the content, answered at once
// instead of pinning a core for minutes.
func TestAPreviewTooDenseInMarkupIsRefusedAtOnce(t *testing.T) {
	gin.SetMode(gin.TestMode)
	h := &Handler{previews: newPreviewSlots()}
	engine := gin.New()
	engine.POST(PreviewPath, h.preview)
	for _, unit := range []string{"*a_", "[](", "![](", "_a*"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, PreviewPath, strings.NewReader(`{"type":"MARKDOWN","content":"`+strings.Repeat(unit, 200000)+`"}`))
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		engine.ServeHTTP(rec, req)
		if took := time.Since(start); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"field":"content"`) ||
			!strings.Contains(rec.Body.String(), "blank line") || took > 2*time.Second {
			t.Errorf("%q repeated: %d after %v %.300s, want a 422 on content at once", unit, rec.Code, took, rec.Body)
		}
	}
}
