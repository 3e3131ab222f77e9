package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/media/internal/rendition"
)

// text answers GET /public/medias/:id/text: the words of a PDF, for an
// app's own search, extracted once and stored; compressed as the client
// accepts (gzip, zstd, br: each made once and kept in memory), with a strong ETag (a digest of the text)
// and 304 for it. It is revalidated (no-cache), not immutable: a later
// version of the extractor may read more of a PDF.
func (h *Handler) text(c *gin.Context) {
	rec, ok := h.record(c, rendering.MaxLag(c.Request, publicLag))
	if !ok {
		return
	}
	if h.renditions == nil {
		fail(c, rendition.ErrNoText)
		return
	}
	r, err := h.renditions.TextRendering(c, rec.m, c.GetHeader("Accept-Encoding"))
	if err != nil {
		fail(c, err)
		return
	}
	r.Serve(c.Writer, c.Request, rendering.Public)
}
