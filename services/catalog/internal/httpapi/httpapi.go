// Package httpapi serves the catalog over HTTP: the public and back-office
// document routes (authenticated by the gateway, not here), document
// downloads, and the internal media-usage lookup the media service asks
// before deleting a media. It owns the JSON shapes and the one mapping from
// domain errors to problem+json.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/catalog/internal/document"
)

// Revisioner tells when documents last changed (the store does).
type Revisioner interface {
	Revision(ctx context.Context) (int64, error)
}

// Handler serves the catalog routes.
type Handler struct {
	svc       *document.Service
	public    *rendering.Cache[*rendering.Rendering]
	admin     *rendering.Cache[*rendering.Rendering]
	media     http.Handler // proxies PDF downloads to the media service
	onDeleted func()
}

// Options tune a Handler.
type Options struct {
	// MediaURL is the media service, which PDF downloads are streamed from.
	MediaURL *url.URL
	// OnDeleted runs after a document is deleted (the outbox relay's nudge).
	OnDeleted func()
}

// New returns a Handler.
func New(svc *document.Service, rev Revisioner, opt Options) *Handler {
	h := &Handler{svc: svc, media: mediaProxy(opt.MediaURL), onDeleted: opt.OnDeleted}
	if h.onDeleted == nil {
		h.onDeleted = func() {}
	}
	// Each listing is rendered once per revision (rendering.Cache); the
	// public one may lag writes through other replicas by up to
	// publicCheckEvery, the back-office one compares the revision on every
	// request.
	h.public = &rendering.Cache[*rendering.Rendering]{Revision: rev.Revision, MaxAge: maxAge,
		Load: func(ctx context.Context) (*rendering.Rendering, error) { return h.render(ctx, false) }}
	h.admin = &rendering.Cache[*rendering.Rendering]{Revision: rev.Revision, MaxAge: maxAge,
		Load: func(ctx context.Context) (*rendering.Rendering, error) { return h.render(ctx, true) }}
	return h
}

// Register adds the routes to r; every GET answers HEAD too.
func (h *Handler) Register(r gin.IRouter) {
	httpx.GET(r, "/public/documents", h.list(false))
	httpx.GET(r, "/public/documents/:id/detail", h.publicDetail)
	httpx.GET(r, "/public/documents/:id/download", h.download(false))

	httpx.GET(r, "/bo/documents", h.list(true))
	r.POST("/bo/documents", h.create)
	r.PATCH("/bo/documents/:id", h.update)
	r.DELETE("/bo/documents/:id", h.delete)
	httpx.GET(r, "/bo/documents/:id/detail", h.adminDetail)
	httpx.GET(r, "/bo/documents/:id/download", h.download(true))
	r.POST("/bo/documents/:id/restore", h.restore)

	httpx.GET(r, "/internal/media-usage/:id", h.mediaUsage)
}

func (h *Handler) render(ctx context.Context, admin bool) (*rendering.Rendering, error) {
	docs, err := h.svc.List(ctx, admin)
	if err != nil {
		return nil, err
	}
	if admin {
		out := make([]documentAdminShort, len(docs))
		for i, d := range docs {
			out[i] = toAdminShort(d)
		}
		return rendering.JSON(out)
	}
	out := make([]documentShort, len(docs))
	for i, d := range docs {
		out[i] = toShort(d)
	}
	return rendering.JSON(out)
}

// list serves the listing's rendering: ETag, 304, compression. A public
// read that asks for a revalidated answer (Cache-Control: no-cache, as the
// gateway does after a back-office write through it) compares the revision
// first, like a back-office one.
func (h *Handler) list(admin bool) gin.HandlerFunc {
	cache, lag, cacheControl := h.public, publicCheckEvery, rendering.Public
	if admin {
		cache, lag, cacheControl = h.admin, 0, rendering.Private
	}
	return func(c *gin.Context) {
		r, err := cache.Get(c, rendering.MaxLag(c.Request, lag))
		if err != nil {
			fail(c, err)
			return
		}
		r.Serve(c.Writer, c.Request, cacheControl)
	}
}

// publicDetail and adminDetail render the document on each request (the
// catalog's in-memory document model will keep them rendered), so that
// they are conditional and compressed like every other read.
func (h *Handler) publicDetail(c *gin.Context) {
	d, err := h.svc.GetLive(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	serveJSON(c, toDetail(d), rendering.Public)
}

func (h *Handler) adminDetail(c *gin.Context) {
	d, err := h.svc.Get(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	serveJSON(c, toAdmin(d), rendering.Private)
}

func serveJSON(c *gin.Context, v any, cacheControl string) {
	r, err := rendering.JSON(v)
	if err != nil {
		fail(c, err)
		return
	}
	r.Serve(c.Writer, c.Request, cacheControl)
}

func (h *Handler) create(c *gin.Context) {
	var in documentInput
	if !httpx.BindJSON(c, &in) {
		return
	}
	d, err := h.svc.Create(c, in.domain())
	if err != nil {
		fail(c, err)
		return
	}
	h.changed()
	c.Header("Location", "/bo/documents/"+d.ID+"/detail")
	c.JSON(http.StatusCreated, toAdmin(d))
}

func (h *Handler) update(c *gin.Context) {
	var in documentInput
	if !httpx.BindJSON(c, &in) {
		return
	}
	d, err := h.svc.Update(c, c.Param("id"), in.domain())
	if err != nil {
		fail(c, err)
		return
	}
	h.changed()
	c.JSON(http.StatusOK, toAdmin(d))
}

func (h *Handler) delete(c *gin.Context) {
	deleted, err := h.svc.Delete(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	if deleted {
		h.changed()
		h.onDeleted()
	}
	c.Status(http.StatusNoContent)
}

func (h *Handler) restore(c *gin.Context) {
	d, err := h.svc.Restore(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	h.changed()
	c.JSON(http.StatusOK, toAdmin(d))
}

func (h *Handler) mediaUsage(c *gin.Context) {
	ids, err := h.svc.MediaUsers(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, mediaUsage{InUse: len(ids) > 0, DocumentIDs: ids})
}

func (h *Handler) changed() {
	h.public.Invalidate()
	h.admin.Invalidate()
}

// fail answers with the problem for err: the one place where the catalog's
// errors get their HTTP meaning.
func fail(c *gin.Context, err error) {
	httpx.Abort(c, err, func(err error) *problem.Problem {
		id := c.Param("id")
		var unavailable *document.UnavailableError
		switch {
		case errors.Is(err, document.ErrNotFound):
			return problem.NotFound(fmt.Sprintf("there is no document '%s'", id))
		case errors.Is(err, document.ErrDeleted):
			return problem.Conflict("document_deleted", fmt.Sprintf("document '%s' is deleted; restore it before changing it", id))
		case errors.Is(err, document.ErrTypeImmutable):
			p := problem.Validation("the type of a document cannot change", []problem.FieldError{{Field: "type", Message: "must equal the document's type"}})
			p.Code = "type_immutable"
			return p
		case errors.Is(err, document.ErrNoFile):
			return problem.New(http.StatusNotFound, "no_file", fmt.Sprintf("document '%s' has no file to download", id))
		case errors.Is(err, document.ErrConflict):
			return problem.Conflict("conflict", "another write to this document has been under way for too long; try again")
		case errors.As(err, &unavailable):
			return problem.Unavailable(fmt.Sprintf("the %s is unavailable, so the references could not be checked; try again shortly", unavailable.Service)).With("Retry-After", "5")
		}
		return problem.Common(err, "catalog database", mongox.IsUnavailable)
	})
}
