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
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/idempotency"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/library"
)

// publicLag is how stale a public read may be: a write through another
// replica shows on the public side within it. Back-office reads allow none,
// nor a public one that asks for a revalidated answer (Cache-Control:
// no-cache, as the gateway asks after a back-office write through it).
const publicLag = 100 * time.Millisecond

// Handler serves the catalog routes, reads from the replica's memory
// (library), writes through the domain service.
type Handler struct {
	svc   *document.Service
	lib   *library.Library
	media http.Handler // proxies PDF downloads to the media service
	// previews bounds the text previews render at once (preview.go).
	previews *previewSlots
	// bundles are the bundles made lately, on disk (spool.go).
	bundles *spool
}

// Options tune a Handler.
type Options struct {
	// MediaURL is the media service, which PDF downloads are streamed from.
	MediaURL *url.URL
}

// New returns a Handler.
func New(svc *document.Service, lib *library.Library, opt Options) *Handler {
	return &Handler{svc: svc, lib: lib, media: mediaProxy(opt.MediaURL), previews: newPreviewSlots(), bundles: newSpool(spoolBytes)}
}

// Register adds the routes to r; every GET answers HEAD too. Every route
// but the downloads (which stream a media's bytes) shares one time budget
// per request (httpx.Budget).
func (h *Handler) Register(r gin.IRouter) {
	b := r.Group("", httpx.Budget(httpx.RequestBudget), h.precondition)
	httpx.GET(b, "/public/documents", h.list(false))
	httpx.GET(b, "/public/documents/:id/detail", h.detail(false))
	httpx.GET(r, "/public/documents/:id/download", h.download(false))
	httpx.GET(b, "/public/sync", httpx.StrictQuery, h.sync) // the one route that reads a query
	h.registerReads(r)

	httpx.GET(b, "/bo/documents", h.list(true))
	b.POST("/bo/documents", h.create)
	b.POST(PreviewPath, h.preview)
	b.PATCH("/bo/documents/:id", h.update)
	b.DELETE("/bo/documents/:id", h.delete)
	httpx.GET(b, "/bo/documents/:id/detail", h.boDetail)
	httpx.GET(r, "/bo/documents/:id/download", h.download(true))
	b.POST("/bo/documents/:id/restore", h.restore)
	h.registerEditorial(b)
	h.registerImport(b)

	httpx.GET(b, "/internal/media-usage/:id", h.mediaUsage)
}

// side is what differs between a public and a back-office read.
type side struct {
	admin        bool
	lag          time.Duration
	cacheControl string
}

func sideOf(admin bool) side {
	if admin {
		return side{admin: true, lag: 0, cacheControl: rendering.Private}
	}
	return side{lag: publicLag, cacheControl: rendering.Public}
}

// list serves a listing rendered once per snapshot: ETag, 304, compression.
func (h *Handler) list(admin bool) gin.HandlerFunc {
	sd := sideOf(admin)
	return func(c *gin.Context) {
		s, err := h.lib.Get(c, rendering.MaxLag(c.Request, sd.lag))
		if err != nil {
			fail(c, err)
			return
		}
		r, err := memo(s, fmt.Sprintf("list:%v", admin), func() (any, error) {
			docs := s.Listing(admin)
			if admin {
				out := make([]documentAdminShort, len(docs))
				for i, d := range docs {
					out[i] = toAdminShort(*d)
				}
				return out, nil
			}
			out := make([]documentShort, len(docs))
			for i, d := range docs {
				out[i] = toShort(*d)
			}
			return out, nil
		})
		if err != nil {
			fail(c, err)
			return
		}
		r.Serve(c.Writer, c.Request, sd.cacheControl)
	}
}

// memo returns the JSON rendering of what build makes, once per snapshot.
func memo(s *library.Snapshot, key string, build func() (any, error)) (*rendering.Rendering, error) {
	r, err := s.Memo(key, func() (any, error) {
		v, err := build()
		if err != nil {
			return nil, err
		}
		return rendering.JSON(v)
	})
	if err != nil {
		return nil, err
	}
	return r.(*rendering.Rendering), nil
}

// find returns the document id as the side sees it (the public side: live
// only). A public read that does not find it looks again in a fresh
// snapshot: it may have been created a moment ago through another replica.
func (h *Handler) find(c *gin.Context, sd side) (*library.Snapshot, *document.Document, error) {
	id := c.Param("id")
	sd.lag = rendering.MaxLag(c.Request, sd.lag)
	s, err := h.lib.Get(c, sd.lag)
	for attempt := 0; err == nil; attempt++ {
		if d, ok := s.Doc(id); ok && sd.admin {
			return s, d, nil
		}
		if d, ok := s.Public(id); ok && !sd.admin {
			return s, d, nil
		}
		if attempt == 1 || sd.lag == 0 {
			return nil, nil, document.ErrNotFound
		}
		s, err = h.lib.Get(c, 0)
	}
	return nil, nil, err
}

// detail serves a document with its related documents, rendered once per
// snapshot.
func (h *Handler) detail(admin bool) gin.HandlerFunc {
	sd := sideOf(admin)
	return func(c *gin.Context) {
		s, d, err := h.find(c, sd)
		if err != nil {
			fail(c, err)
			return
		}
		r, err := memo(s, fmt.Sprintf("detail:%v:%s", admin, d.ID), func() (any, error) {
			return toDetailOf(s, d, admin), nil
		})
		if err != nil {
			fail(c, err)
			return
		}
		r.Serve(c.Writer, c.Request, sd.cacheControl)
	}
}

// toDetailOf is d's detail as a side shows it, with its related documents.
func toDetailOf(s *library.Snapshot, d *document.Document, admin bool) any {
	related := s.Related(d)
	if admin {
		return toAdmin(*d, related)
	}
	return toDetail(*d, related)
}

// writtenClearing is written for a restore or an import, whose answer
// also says which overdue schedule it cleared (clearedSchedule).
func (h *Handler) writtenClearing(c *gin.Context, status int, d document.Document, o document.Overdue) {
	if !o.Any() {
		h.written(c, status, d)
		return
	}
	h.put(c, d)
	c.Header("ETag", document.ETag(d.Version))
	c.JSON(status, clearingAnswer{documentAdmin: toDetailOf(h.lib.Current(), &d, true).(documentAdmin),
		ClearedSchedule: &clearedSchedule{PublishAt: optionalTime(o.PublishAt), UnpublishAt: optionalTime(o.UnpublishAt),
			Reason: clearedReason(o)}})
}

// clearedReason says why a schedule was cleared: a passed publication is
// dropped, a passed unpublication is applied (the document is a draft).
func clearedReason(o document.Overdue) string {
	const dropped = "its time had passed: a past time is never taken as now; schedule it again, or publish it now"
	const applied = "its unpublication time had passed: the document was taken offline, it is a draft; publish it again if it should be public"
	switch {
	case o.UnpublishAt.IsZero():
		return dropped
	case o.PublishAt.IsZero():
		return applied
	}
	return "publication " + dropped + "; " + applied
}

// put puts documents this replica wrote into its memory once their
// transaction committed (a keyed request's commits after the handler).
func (h *Handler) put(c *gin.Context, ds ...document.Document) {
	mongox.OnCommit(c.Request.Context(), func() { h.lib.Put(ds...) })
}

// written puts a document this replica wrote into its memory, and answers
// it as the back-office sees it.
func (h *Handler) written(c *gin.Context, status int, d document.Document) {
	h.put(c, d)
	c.Header("ETag", document.ETag(d.Version))
	c.JSON(status, toDetailOf(h.lib.Current(), &d, true))
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
	c.Header("Location", "/bo/documents/"+d.ID+"/detail")
	h.written(c, http.StatusCreated, d)
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
	h.written(c, http.StatusOK, d)
}

func (h *Handler) delete(c *gin.Context) {
	d, deleted, err := h.svc.Delete(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	if deleted {
		h.put(c, d)
	}
	c.Status(http.StatusNoContent)
}

func (h *Handler) restore(c *gin.Context) {
	d, overdue, err := h.svc.Restore(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	h.writtenClearing(c, http.StatusOK, d, overdue)
}

// sync serves a page of the sync feed (library/sync.go), conditional and
// compressed like every public read.
func (h *Handler) sync(c *gin.Context) {
	raw, given := c.GetQuery("cursor")
	if given && raw == "" {
		fail(c, library.ErrBadCursor)
		return
	}
	p, err := h.lib.Sync(c, raw, rendering.MaxLag(c.Request, publicLag))
	if err != nil {
		fail(c, err)
		return
	}
	var r *rendering.Rendering
	if p.Shared != "" {
		// A first sync is the same for every client: rendered (and
		// compressed) once, like the listing.
		r, err = memo(p.From, p.Shared, func() (any, error) { return toSyncPage(p), nil })
	} else {
		r, err = rendering.JSON(toSyncPage(p))
	}
	if err != nil {
		fail(c, err)
		return
	}
	r.Serve(c.Writer, c.Request, rendering.Public)
}

func (h *Handler) mediaUsage(c *gin.Context) {
	ids, err := h.svc.MediaUsers(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, mediaUsage{InUse: len(ids) > 0, DocumentIDs: ids})
}

// fail answers with the problem for err: the one place where the catalog's
// errors get their HTTP meaning.
func fail(c *gin.Context, err error) {
	httpx.Abort(c, err, func(err error) *problem.Problem {
		id := c.Param("id")
		if p := editorialProblem(err, id); p != nil {
			return p
		}
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
		case errors.Is(err, document.ErrImportConflict):
			return problem.Conflict("import_conflict", err.Error())
		case errors.Is(err, document.ErrConflict):
			return problem.Conflict("conflict", "another write to this document has been under way for too long; try again")
		case errors.Is(err, library.ErrBadCursor):
			return problem.BadRequest(fmt.Sprintf("the cursor is not one this service made (%v); sync again without one", err))
		case errors.Is(err, library.ErrCursorExpired):
			return problem.New(http.StatusGone, "cursor_expired", "the cursor is older than the removals kept; sync again without one")
		case errors.As(err, &unavailable):
			return problem.Unavailable(fmt.Sprintf("the %s is unavailable, so the references could not be checked; try again shortly", unavailable.Service)).With("Retry-After", "5")
		case httpx.Writes(c.Request) && mongox.IsUnavailable(err):
			// The write may have reached the database: it may apply it yet.
			return httpx.OutcomeUnknown("the catalog database")
		}
		return problem.Common(err, "catalog database", mongox.IsUnavailable)
	})
}

// CreatedDeleted is the Idempotency-Key recheck of a create retried after
// an unknown outcome: when the document its first attempt made was
// deleted since (in the trash, or purged), the retry is told so rather
// than answered the document as made.
func CreatedDeleted(get func(ctx context.Context, id string) (document.Document, error)) func(context.Context, idempotency.Answer) *problem.Problem {
	return func(ctx context.Context, first idempotency.Answer) *problem.Problem {
		id, ok := strings.CutPrefix(first.Header.Get("Location"), "/bo/documents/")
		id = strings.TrimSuffix(id, "/detail")
		if first.Status != http.StatusCreated || !ok {
			return nil
		}
		d, err := get(ctx, id)
		where := "it is in the trash: restore it to have it back"
		switch {
		case errors.Is(err, document.ErrNotFound):
			where = "it was purged from the trash"
		case err != nil || !d.IsDeleted:
			return nil
		}
		return problem.Conflict("created_document_deleted", fmt.Sprintf(
			"an earlier attempt of this request created document '%s', deleted since (%s); it is not created again: send a new Idempotency-Key for a new document", id, where))
	}
}
