package httpapi

import (
	"path"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/rendition"
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
	if h.renditions != nil && rendition.Asked(c.Request.URL.Query()) && h.serveRendition(c, cacheControl) {
		return
	}
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

// serveRendition answers a download that names rendition parameters, and
// reports false when the media gets none (not an image, or an SVG while
// they are not rasterised): the original is served, the parameters
// ignored.
func (h *Handler) serveRendition(c *gin.Context, cacheControl string) bool {
	// The record from the rendered ones (as GET /public/medias/:id: up to
	// publicLag old on /public, checked on /bo), not a database read per
	// request: a stored rendition then costs one object read.
	maxLag := time.Duration(0)
	if cacheControl == publicCache {
		maxLag = rendering.MaxLag(c.Request, publicLag)
	}
	rec, ok := h.record(c, maxLag)
	if !ok {
		return true
	}
	m := rec.m
	if !h.renditions.Renders(m.MimeType) {
		return false
	}
	req, err := h.renditions.Config().Parse(c.Request.URL.Query(), c.GetHeader("Accept"), m.MimeType)
	if err != nil {
		fail(c, err)
		return true
	}
	res, err := h.renditions.Get(c, m, req.Spec)
	if err != nil {
		fail(c, err)
		return true
	}
	defer res.Body.Close()
	hd := c.Writer.Header()
	if req.Negotiated {
		hd.Set("Vary", "Accept")
	}
	hd.Set("Content-Type", res.ContentType)
	hd.Set("ETag", res.ETag)
	hd.Set("Content-Disposition", httpx.ContentDisposition("inline", renamed(m.Name, req.Format)))
	hd.Set("Cache-Control", cacheControl)
	if err := httpx.ServeContent(c.Writer, c.Request, res.ModTime, res.Size, res.Body); err != nil {
		_ = c.Error(err)
		h.log.WarnContext(c, "rendition download broke off", "media_id", m.ID, "error", err)
	}
	return true
}

// renamed is name with the extension of format.
func renamed(name, format string) string {
	if ext := path.Ext(name); ext != "" {
		name = strings.TrimSuffix(name, ext)
	}
	if format == rendition.JPEG {
		return name + ".jpg"
	}
	return name + "." + format
}

func fieldErrors(e *rendition.ValidationError) []problem.FieldError {
	out := make([]problem.FieldError, len(e.Fields))
	for i, f := range e.Fields {
		out[i] = problem.FieldError{Field: f.Field, Message: f.Message}
	}
	return out
}
