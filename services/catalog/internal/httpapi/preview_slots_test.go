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
// preview waits, then answers 503 with Retry-After and renders nothing;
// once they are done it renders.
func TestPreviewsTakeTurns(t *testing.T) {
	gin.SetMode(gin.TestMode)
	h := &Handler{previews: newPreviewSlots(), previewWait: 50 * time.Millisecond}
	engine := gin.New()
	engine.POST(PreviewPath, h.preview)
	ask := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, PreviewPath, strings.NewReader(`{"type":"MARKDOWN","content":"# Hi"}`))
		req.Header.Set("Content-Type", "application/json")
		engine.ServeHTTP(rec, req)
		return rec
	}
	if err := h.previews.Acquire(context.Background(), previewBytes); err != nil {
		t.Fatal(err)
	}
	rec := ask()
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "other previews") {
		t.Errorf("a preview while the budget is taken: %d %q %s, want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	h.previews.Release(previewBytes)
	if rec := ask(); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `\u003ch1\u003eHi`) {
		t.Errorf("a preview once the budget is free: %d %s", rec.Code, rec.Body)
	}
	if w := previewWeight(strings.Repeat("x", 3<<20)); w != previewBytes {
		t.Errorf("an oversized text weighs %d, want the whole budget (it is then refused 422)", w)
	}
}
