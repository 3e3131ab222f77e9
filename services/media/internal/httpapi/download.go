package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/media/internal/media"
)

// Cache-Control of downloads: the bytes behind an id never change. Back-office
// answers are private: they were asked for with credentials, and "public"
// would let shared caches keep them.
const (
	publicCache  = "public, max-age=31536000, immutable"
	privateCache = "private, max-age=31536000, immutable"
)

// download streams the file; ranges and conditional requests are answered
// by httpx.ServeContent, which needs the validators set before it runs.
func (h *Handler) download(c *gin.Context, cacheControl string) {
	m, obj, err := h.svc.Open(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	defer obj.Close()
	hd := c.Writer.Header()
	hd.Set("Content-Type", m.MimeType) // also stops ServeContent from sniffing
	hd.Set("ETag", `"`+m.SHA256+`"`)
	hd.Set("Content-Disposition", httpx.ContentDisposition(disposition(m), m.Name))
	hd.Set("Cache-Control", cacheControl)
	if err := httpx.ServeContent(c.Writer, c.Request, m.CreatedAt, m.Size, obj); err != nil {
		_ = c.Error(err)
		h.log.WarnContext(c, "download broke off", "media_id", m.ID, "error", err)
	}
}

// disposition is inline for PDF and images (the app opens them in a web
// view), attachment for anything else.
func disposition(m media.Media) string {
	if m.MimeType == "application/pdf" || m.IsImage() {
		return "inline"
	}
	return "attachment"
}
