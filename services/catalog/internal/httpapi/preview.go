package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
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
// 370 MB allocated, and a viewer may ask for one, so a burst takes turns
// instead of taking the process's memory. A request weighs its text, and
// at least previewMinWeight, so many small ones still take turns. At most
// previewQueue wait (each holds its body), for previewWait at most, so a
// 1 MiB render still fits the request budget after the wait; others are
// 503 at once.
const (
	previewBytes     = 2 << 20
	previewMinWeight = 64 << 10
	previewQueue     = 8
	previewWait      = time.Second
)

// previewSlots are the turns of previews.
type previewSlots struct {
	sem     *semaphore.Weighted
	waiting atomic.Int64
	wait    time.Duration
}

func newPreviewSlots() *previewSlots {
	return &previewSlots{sem: semaphore.NewWeighted(previewBytes), wait: previewWait}
}

// previewWeight is what content takes of the previews' budget (content is
// at most document.MaxContent, checked before).
func previewWeight(content string) int64 {
	return min(max(int64(len(content)), previewMinWeight), previewBytes)
}

// take waits for w of the budget; false when the queue is full or the wait
// is over. Release with give.
func (s *previewSlots) take(ctx context.Context, w int64) bool {
	if s.sem.TryAcquire(w) {
		return true
	}
	if s.waiting.Add(1) > previewQueue {
		s.waiting.Add(-1)
		return false
	}
	defer s.waiting.Add(-1)
	ctx, cancel := context.WithTimeout(ctx, s.wait)
	defer cancel()
	return s.sem.Acquire(ctx, w) == nil
}

func (s *previewSlots) give(w int64) { s.sem.Release(w) }

// preview renders an unsaved text with the sanitiser and Markdown reader
// the documents get; nothing is stored, so it never changes the library.
func (h *Handler) preview(c *gin.Context) {
	var in previewInput
	if !httpx.BindJSON(c, &in) {
		return
	}
	if err := document.CheckPreview(in.Type, in.Content); err != nil {
		fail(c, err)
		return
	}
	w := previewWeight(in.Content)
	if !h.previews.take(c.Request.Context(), w) {
		httpx.Fail(c, problem.Unavailable("the service is rendering other previews; ask again in a moment").With("Retry-After", "1"))
		return
	}
	defer h.previews.give(w)
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
