package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/sync/semaphore"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/services/catalog/internal/document"
)

// previewInput is the body of POST /bo/documents/preview.
type previewInput struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// previewOutput is a text as it would be stored and shown.
type previewOutput struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	HTML    string `json:"html"`
}

// PreviewPath is the document preview's route.
const PreviewPath = "/bo/documents/preview"

// Safe reports whether r changes nothing although it is a POST: the
// preview. A viewer may send it, and the service's write handling (the
// unknown-outcome bound, Idempotency-Key) leaves it alone: it stores
// nothing, so there is no outcome to keep or to be unsure of.
func Safe(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == PreviewPath }

// The previews one catalog renders at once are bounded by the bytes of
// text they carry: a 1 MiB Markdown preview costs about 1.6 s of CPU and
// 370 MB allocated, and a viewer may ask for one, so a burst waits its
// turn (previewWait at most, then 503) instead of taking the process's
// memory. A request weighs its text, and at least previewMinWeight, so
// many small ones still take turns.
const (
	previewBytes     = 2 << 20
	previewMinWeight = 64 << 10
	previewWait      = 2 * time.Second
)

func newPreviewSlots() *semaphore.Weighted { return semaphore.NewWeighted(previewBytes) }

// previewWeight is what content takes of the previews' budget.
func previewWeight(content string) int64 {
	return min(max(int64(len(content)), previewMinWeight), previewBytes)
}

// preview renders an unsaved text with the sanitiser and Markdown reader
// the documents get; nothing is stored, so it never changes the library.
func (h *Handler) preview(c *gin.Context) {
	var in previewInput
	if !httpx.BindJSON(c, &in) {
		return
	}
	w := previewWeight(in.Content)
	wait, cancel := context.WithTimeout(c.Request.Context(), h.previewWait)
	defer cancel()
	if err := h.previews.Acquire(wait, w); err != nil {
		httpx.Fail(c, problem.Unavailable("the service is rendering other previews; ask again in a moment").With("Retry-After", "1"))
		return
	}
	defer h.previews.Release(w)
	p, err := document.RenderPreview(c.Request.Context(), in.Type, in.Content)
	if errors.Is(err, context.DeadlineExceeded) { // the budget passed: nothing to be unsure of
		httpx.Abort(c, err, func(error) *problem.Problem {
			return problem.Unavailable("the preview took longer than the request budget; ask again, or with a shorter text")
		})
		return
	} else if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, previewOutput{Type: in.Type, Content: p.Content, HTML: p.HTML})
}
