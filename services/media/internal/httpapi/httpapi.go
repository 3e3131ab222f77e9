// Package httpapi serves media over HTTP: the public record and download
// routes, the back-office upload, listing and deletion (authenticated by the
// gateway, not here), and the internal lookup and download the catalog uses.
// It owns the JSON shapes, the download headers and the one mapping from
// domain errors to problem+json.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/lookup"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/rendition"
)

// multipartSlack is what a request body may carry beyond the file: part
// headers, boundaries and small other fields.
const multipartSlack = 1 << 20

// How fresh the rendered records are. A public read may lag a write through
// another replica by publicLag, unless it asks for a revalidated answer
// (Cache-Control: no-cache, as the gateway does after a back-office write
// through it); an id it does not know yet is checked at once: it may be a
// media just uploaded elsewhere. A back-office read
// compares the revision every time, so an author sees their own write at
// once through any replica. maxAge renders again even though the revision
// did not move, should a bump have been lost.
const (
	publicLag = 100 * time.Millisecond
	maxAge    = time.Minute
)

// Revisioner tells when records were last shown or hidden (the store does).
type Revisioner interface {
	Revision(ctx context.Context) (int64, error)
}

// Handler holds the media use cases, the rendered records, and an optional
// hook run after each deletion (the outbox relay's nudge).
type Handler struct {
	svc       *media.Service
	log       *slog.Logger
	records   *rendering.Cache[records]
	onDeleted func()
	// renditions makes images' renditions; nil ignores the parameters.
	renditions *rendition.Service
}

// records is every live media rendered: the back-office listing, and each
// record for each side. Records are small and few, so all are rendered at
// once when the revision moves.
type records struct {
	list *rendering.Rendering
	byID map[string]record
}

type record struct {
	public, admin *rendering.Rendering
	m             media.Media // for renditions: no database read per request
}

// New returns a Handler. onDeleted may be nil.
func New(svc *media.Service, rev Revisioner, log *slog.Logger, onDeleted func()) *Handler {
	if onDeleted == nil {
		onDeleted = func() {}
	}
	h := &Handler{svc: svc, log: log, onDeleted: onDeleted}
	h.records = &rendering.Cache[records]{Load: h.render, Revision: rev.Revision, MaxAge: maxAge}
	return h
}

// WithRenditions makes the downloads answer the rendition parameters with
// r, and the records list the presets' URLs.
func (h *Handler) WithRenditions(r *rendition.Service) *Handler {
	h.renditions = r
	return h
}

// Register adds the routes to r; every GET answers HEAD too. Every route
// but the upload and the downloads (which stream a file) shares one time
// budget per request (httpx.Budget); those bound the calls around their
// stream (media.Service).
func (h *Handler) Register(r gin.IRouter) {
	b := r.Group("", httpx.Budget(httpx.RequestBudget))
	httpx.GET(b, "/public/medias/:id", h.publicMedia)
	h.downloads(r, "/public/medias/:id/download", publicCache)
	httpx.GET(r, "/public/medias/:id/text", h.text)

	httpx.GET(b, "/bo/medias", h.list)
	r.POST("/bo/medias", h.changed, h.upload)
	r.PUT("/bo/import/medias/:id", h.changed, h.importMedia)
	httpx.GET(b, "/bo/medias/:id", h.adminMedia)
	b.DELETE("/bo/medias/:id", h.changed, h.delete)
	h.downloads(r, "/bo/medias/:id/download", privateCache)

	httpx.GET(b, "/internal/medias", h.lookupMedias)
	h.downloads(r, "/internal/medias/:id/download", publicCache)
}

func (h *Handler) downloads(r gin.IRouter, path, cacheControl string) {
	httpx.GET(r, path, func(c *gin.Context) { h.download(c, cacheControl) })
}

// changed wraps every write: whatever its answer (a failed write may have
// written part), this replica renders the records again at its next read.
func (h *Handler) changed(c *gin.Context) {
	c.Next()
	h.records.Invalidate()
}

// render reads every live media once and renders the listing and each record.
func (h *Handler) render(ctx context.Context) (records, error) {
	ms, err := h.svc.List(ctx)
	if err != nil {
		return records{}, err
	}
	out := records{byID: make(map[string]record, len(ms))}
	list := make([]fileMediaAdmin, len(ms))
	for i, m := range ms {
		list[i] = h.toFileMediaAdmin(m)
		rec := record{m: m}
		if rec.public, err = rendering.JSON(h.toFileMedia(m)); err != nil {
			return records{}, err
		}
		if rec.admin, err = rendering.JSON(list[i]); err != nil {
			return records{}, err
		}
		out.byID[m.ID] = rec
	}
	if out.list, err = rendering.JSON(list); err != nil {
		return records{}, err
	}
	return out, nil
}

func (h *Handler) publicMedia(c *gin.Context) {
	if rec, ok := h.record(c, rendering.MaxLag(c.Request, publicLag)); ok {
		rec.public.Serve(c.Writer, c.Request, rendering.Public)
	}
}

func (h *Handler) adminMedia(c *gin.Context) {
	if rec, ok := h.record(c, 0); ok {
		rec.admin.Serve(c.Writer, c.Request, rendering.Private)
	}
}

// record finds the media of the request's id among the rendered records, or
// answers the failure. An id unknown to renderings up to maxLag old is
// looked for again after a revision check.
func (h *Handler) record(c *gin.Context, maxLag time.Duration) (record, bool) {
	for {
		recs, err := h.records.Get(c, maxLag)
		if err != nil {
			fail(c, err)
			return record{}, false
		}
		if rec, ok := recs.byID[c.Param("id")]; ok {
			return rec, true
		}
		if maxLag == 0 {
			fail(c, media.ErrNotFound)
			return record{}, false
		}
		maxLag = 0
	}
}

func (h *Handler) list(c *gin.Context) {
	recs, err := h.records.Get(c, 0)
	if err != nil {
		fail(c, err)
		return
	}
	recs.list.Serve(c.Writer, c.Request, rendering.Private)
}

// upload streams the part named "file" of a multipart/form-data body to the
// service; nothing is held in memory or spooled to disk (no FormFile). Other
// parts are skipped, and so is everything after the file.
func (h *Handler) upload(c *gin.Context) {
	if mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type")); err != nil || mt != "multipart/form-data" {
		httpx.Fail(c, problem.UnsupportedMediaType("this route takes multipart/form-data with the file in the part named 'file'"))
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, h.svc.MaxSize()+multipartSlack)
	mr, err := c.Request.MultipartReader()
	if err != nil {
		httpx.Fail(c, problem.BadRequest("the multipart/form-data content type has no boundary"))
		return
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			fail(c, media.ErrNoFile)
			return
		}
		if err != nil {
			fail(c, h.bodyError(err))
			return
		}
		if part.FormName() != "file" {
			continue // NextPart skips what is left of it
		}
		m, created, err := h.svc.Upload(c, partFileName(part), part)
		if err != nil {
			fail(c, err)
			return
		}
		status := http.StatusCreated
		if !created { // these bytes were stored already: that media
			status = http.StatusOK
		}
		c.Header("Location", "/bo/medias/"+m.ID)
		c.JSON(status, h.toFileMediaAdmin(m))
		return
	}
}

func (h *Handler) bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &media.TooLargeError{Limit: h.svc.MaxSize()}
	}
	return &media.IncompleteError{Err: err}
}

// partFileName is the file name as sent, directories included
// (Part.FileName would strip them with the server's rules, which keep
// Windows paths whole on Linux); media.CleanName reduces it.
func partFileName(p *multipart.Part) string {
	_, params, err := mime.ParseMediaType(p.Header.Get("Content-Disposition"))
	if err != nil {
		return p.FileName()
	}
	return params["filename"]
}

func (h *Handler) delete(c *gin.Context) {
	if err := h.svc.Delete(c, c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	h.onDeleted()
	c.Status(http.StatusNoContent)
}

// lookupMedias answers GET /internal/medias?ids=a,b,c with the media among
// ids that exist, those being deleted marked "deleting": true. The catalog
// checks fileId and imagesIds with it (a media being deleted cannot be
// named anew).
func (h *Handler) lookupMedias(c *gin.Context) {
	ids, err := lookup.IDs(c.Request.URL.Query())
	if err != nil {
		httpx.Fail(c, problem.BadRequest(err.Error()))
		return
	}
	ms, err := h.svc.Lookup(c, ids)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]lookupMedia, len(ms))
	for i, m := range ms {
		out[i] = lookupMedia{fileMedia: h.toFileMedia(m), Deleting: m.Deleting}
	}
	c.JSON(http.StatusOK, out)
}

// fail answers with the problem for err: the one place where the media
// service's errors get their HTTP meaning.
func fail(c *gin.Context, err error) {
	httpx.Abort(c, err, func(err error) *problem.Problem {
		var (
			tooLarge     *media.TooLargeError
			unsupported  *media.UnsupportedTypeError
			incomplete   *media.IncompleteError
			badImage     *media.ImageError
			inUse        *media.InUseError
			params       *rendition.ValidationError
			unrenderable *rendition.NotRenderableError
		)
		switch {
		case errors.Is(err, media.ErrNotFound):
			return problem.NotFound(fmt.Sprintf("there is no media '%s'", c.Param("id")))
		case errors.Is(err, media.ErrNoFile):
			return problem.BadRequest("the multipart body has no part named 'file'")
		case errors.As(err, &tooLarge):
			return problem.TooLarge(fmt.Sprintf("an upload may be at most %d bytes", tooLarge.Limit))
		case errors.As(err, &unsupported):
			return problem.UnsupportedMediaType(fmt.Sprintf("the file's content is %s; allowed types are %s",
				unsupported.Detected, strings.Join(unsupported.Allowed, ", ")))
		case errors.As(err, &badImage):
			return problem.Validation("the file is not a valid image", []problem.FieldError{{Field: "file", Message: badImage.Reason}})
		case errors.Is(err, media.ErrSameBeingDeleted):
			return problem.Conflict("conflict", "a media with the same bytes is being deleted; try again in a moment").With("Retry-After", "1")
		case errors.As(err, &incomplete):
			return problem.BadRequest("the multipart body is malformed or was cut off before its end")
		case errors.As(err, &inUse):
			return problem.Conflict("media_in_use", fmt.Sprintf("the media is used by documents that are not deleted: %s",
				strings.Join(inUse.DocumentIDs, ", ")))
		case errors.Is(err, media.ErrMarkLost):
			return problem.Conflict("conflict", "the deletion took too long and was undone; nothing was deleted, try again")
		case errors.Is(err, media.ErrUsageUnknown):
			return problem.Unavailable("the catalog could not be asked whether documents use the media; nothing was deleted, try again shortly").
				With("Retry-After", "5")
		case errors.As(err, &params):
			return problem.Validation("the rendition parameters are invalid", fieldErrors(params))
		case errors.As(err, &unrenderable) && strings.HasSuffix(c.FullPath(), "/text"):
			return problem.New(http.StatusUnprocessableEntity, "text_not_readable",
				"the text of this PDF cannot be read: "+unrenderable.Reason+"; the original is served as it is")
		case errors.As(err, &unrenderable):
			return problem.New(http.StatusUnprocessableEntity, "image_not_renderable",
				"no rendition can be made of this file: "+unrenderable.Reason+"; the original is served without parameters")
		case errors.Is(err, rendition.ErrNoText):
			return problem.NotFound(fmt.Sprintf("media '%s' has no text: only PDFs have one", c.Param("id")))
		case errors.Is(err, rendition.ErrBusy):
			return problem.Unavailable("too many renditions are being made; try again shortly").With("Retry-After", "2")
		case errors.Is(err, media.ErrStorageUnavailable):
			return problem.Unavailable("the file storage is unavailable; try again shortly").
				With("Retry-After", "5")
		case httpx.Writes(c.Request) && mongox.IsUnavailable(err):
			// The write may have reached the database: it may apply it yet.
			return httpx.OutcomeUnknown("the media database")
		}
		return problem.Common(err, "media database", mongox.IsUnavailable)
	})
}
