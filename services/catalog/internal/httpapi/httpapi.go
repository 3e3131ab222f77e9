// Package httpapi serves the catalog over HTTP: the public and back-office
// document routes (authenticated by the gateway, not here), document
// downloads, and the internal media-usage lookup the media service asks
// before deleting a media. It owns the JSON shapes and the one mapping from
// domain errors to problem+json.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/listing"
)

// Revisioner tells when documents last changed (the store does).
type Revisioner interface {
	Revision(ctx context.Context) (int64, error)
}

// Handler serves the catalog routes.
type Handler struct {
	svc       *document.Service
	public    *listing.Cache
	admin     *listing.Cache
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
	// The public listing may lag writes through other replicas by up to
	// 100 ms; the back-office listing compares the revision on every request.
	h.public = &listing.Cache{Revision: rev.Revision, CheckEvery: publicCheckEvery, MaxAge: maxAge,
		Render: func(ctx context.Context) ([]byte, error) { return h.render(ctx, false) }}
	h.admin = &listing.Cache{Revision: rev.Revision, MaxAge: maxAge,
		Render: func(ctx context.Context) ([]byte, error) { return h.render(ctx, true) }}
	return h
}

// Register adds the routes to r.
func (h *Handler) Register(r gin.IRouter) {
	r.GET("/public/documents", h.list(false))
	r.GET("/public/documents/:id/detail", h.publicDetail)
	r.GET("/public/documents/:id/download", h.download(false))

	r.GET("/bo/documents", h.list(true))
	r.POST("/bo/documents", h.create)
	r.PATCH("/bo/documents/:id", h.update)
	r.DELETE("/bo/documents/:id", h.delete)
	r.GET("/bo/documents/:id/detail", h.adminDetail)
	r.GET("/bo/documents/:id/download", h.download(true))
	r.POST("/bo/documents/:id/restore", h.restore)

	r.GET("/internal/media-usage/:id", h.mediaUsage)
}

func (h *Handler) render(ctx context.Context, admin bool) ([]byte, error) {
	docs, err := h.svc.List(ctx, admin)
	if err != nil {
		return nil, err
	}
	if admin {
		out := make([]documentAdminShort, len(docs))
		for i, d := range docs {
			out[i] = toAdminShort(d)
		}
		return json.Marshal(out)
	}
	out := make([]documentShort, len(docs))
	for i, d := range docs {
		out[i] = toShort(d)
	}
	return json.Marshal(out)
}

// list serves a cached rendering, with an ETag so clients can revalidate.
func (h *Handler) list(admin bool) gin.HandlerFunc {
	cache := h.public
	if admin {
		cache = h.admin
	}
	return func(c *gin.Context) {
		e, err := cache.Get(c)
		if err != nil {
			fail(c, err)
			return
		}
		c.Header("ETag", e.ETag)
		c.Header("Cache-Control", "no-cache")
		if httpx.ETagMatch(c.GetHeader("If-None-Match"), e.ETag) {
			c.Status(http.StatusNotModified)
			return
		}
		c.Data(http.StatusOK, "application/json; charset=utf-8", e.Body)
	}
}

func (h *Handler) publicDetail(c *gin.Context) {
	d, err := h.svc.GetLive(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toDetail(d))
}

func (h *Handler) adminDetail(c *gin.Context) {
	d, err := h.svc.Get(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAdmin(d))
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
			return problem.Conflict("conflict", "the document was changed by another request meanwhile; try again")
		case errors.As(err, &unavailable):
			return problem.Unavailable(fmt.Sprintf("the %s is unavailable, so the references could not be checked; try again shortly", unavailable.Service)).With("Retry-After", "5")
		}
		return httpx.CommonProblem(err, "catalog database")
	})
}
