package httpapi

// The editorial routes: If-Match on every back-office write, the
// back-office detail read from the store (both versions, and the ETag of
// the version), revisions, publication.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/catalog/internal/document"
)

// editorialInput is the editorial part of a create or PATCH body.
type editorialInput struct {
	Status      string `json:"status"`
	Draft       bool   `json:"draft"`
	PublishAt   string `json:"publishAt"`
	UnpublishAt string `json:"unpublishAt"`
}

// editorial is the editorial part of the back-office detail.
type editorial struct {
	Status      string       `json:"status"`
	Version     int64        `json:"version"`
	PublishedAt string       `json:"publishedAt,omitempty"`
	PublishAt   string       `json:"publishAt,omitempty"`
	UnpublishAt string       `json:"unpublishAt,omitempty"`
	Draft       *draftDetail `json:"draft"` // the pending changes, null when none
}

// draftDetail is the pending changes with their pins, so that an export
// holds them (doclib).
type draftDetail struct {
	documentDetail
	RelatedIDs []string `json:"relatedIds"`
}

func toEditorial(d document.Document) editorial {
	e := editorial{Status: string(d.State()), Version: d.Version}
	if !d.PublishedAt.IsZero() {
		e.PublishedAt = httpx.FormatTime(d.PublishedAt)
	}
	if !d.PublishAt.IsZero() {
		e.PublishAt = httpx.FormatTime(d.PublishAt)
	}
	if !d.UnpublishAt.IsZero() {
		e.UnpublishAt = httpx.FormatTime(d.UnpublishAt)
	}
	if d.Draft != nil {
		p := *d.Draft
		p.ID, p.Type = d.ID, d.Type
		pins := p.RelatedIDs
		if pins == nil {
			pins = []string{}
		}
		e.Draft = &draftDetail{documentDetail: toDetail(p, nil), RelatedIDs: pins}
	}
	return e
}

type revisionShort struct {
	Version int64  `json:"version"`
	At      string `json:"at"`
	By      string `json:"by"`
	Why     string `json:"why"`
}

type revisionPage struct {
	Revisions []revisionShort `json:"revisions"`
	// NextBefore is the before= of the next page; absent on the last.
	NextBefore int64 `json:"nextBefore,omitempty"`
}

type revisionDetail struct {
	revisionShort
	Document documentAdmin `json:"document"`
}

// revisionFullPage is a page of revisions each with its document
// (?full=true): doclib export reads a document's history in one request.
type revisionFullPage struct {
	Revisions  []revisionDetail `json:"revisions"`
	NextBefore int64            `json:"nextBefore,omitempty"`
}

func toRevisionDetail(r document.Revision) revisionDetail {
	return revisionDetail{revisionShort: toRevisionShort(r), Document: toAdmin(r.Doc, nil)}
}

type dropped struct {
	TagsIDs    []string `json:"tagsIds"`
	MediaIDs   []string `json:"mediaIds"`
	RelatedIDs []string `json:"relatedIds"`
}

type restoredRevision struct {
	documentAdmin
	Dropped dropped `json:"dropped"`
}

func toRevisionShort(r document.Revision) revisionShort {
	return revisionShort{Version: r.Version, At: httpx.FormatTime(r.Change.At), By: r.Change.By, Why: r.Change.Why}
}

func orNone(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

// registerEditorial adds the editorial routes to the budgeted group.
func (h *Handler) registerEditorial(b gin.IRouter) {
	httpx.GET(b, "/bo/documents/:id/revisions", h.revisions)
	httpx.GET(b, "/bo/documents/:id/revisions/:rev", h.revision)
	b.POST("/bo/documents/:id/revisions/:rev/restore", h.restoreRevision)
	b.POST("/bo/documents/:id/publish", h.editorialWrite(h.svc.Publish))
	b.POST("/bo/documents/:id/unpublish", h.editorialWrite(h.svc.Unpublish))
	b.DELETE("/bo/documents/:id/draft", h.editorialWrite(h.svc.DiscardDraft))
}

// precondition carries a back-office write's If-Match into its context
// (document.IfMatch): the store refuses the write if the document is at
// another version. A tag of the back-office detail (version, then a digest
// of the document and one of the whole detail) names its version only when
// its version and document digest are the detail's now: what its related
// documents show (their titles) may have changed meanwhile, the document
// not. Without If-Match, writes are made as before.
func (h *Handler) precondition(c *gin.Context) {
	if c.Request.Method == http.MethodGet || c.Request.Method == http.MethodHead ||
		!strings.HasPrefix(c.Request.URL.Path, "/bo/") {
		return
	}
	v := c.GetHeader("If-Match")
	if v == "" {
		return
	}
	var current func(string) bool
	if id := c.Param("id"); id != "" && strings.Contains(v, ".") {
		if d, err := h.svc.Get(c, id); err == nil {
			if r, err := h.detailRendering(&d); err == nil {
				current = func(tag string) bool { return ownPart(tag) != "" && ownPart(tag) == ownPart(r.ETag()) }
			}
		}
	}
	c.Request = c.Request.WithContext(document.IfMatch(c.Request.Context(), document.ParseIfMatch(v, current)))
}

// boDetail serves the back-office detail from the store (the replica's
// memory holds the public version only): both versions, and an ETag that
// starts with the document's version, for If-Match.
func (h *Handler) boDetail(c *gin.Context) {
	d, err := h.svc.Get(c, c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	r, err := h.detailRendering(&d)
	if err != nil {
		fail(c, err)
		return
	}
	r.Serve(c.Writer, c.Request, rendering.Private)
}

// detailRendering is d's back-office detail, tagged with its version and
// a digest: 12 hex digits of the document's own part (the detail without
// its related documents), 12 of the body.
func (h *Handler) detailRendering(d *document.Document) (*rendering.Rendering, error) {
	body, err := json.Marshal(toDetailOf(h.lib.Current(), d, true))
	if err != nil {
		return nil, err
	}
	own, err := json.Marshal(toAdmin(*d, nil))
	if err != nil {
		return nil, err
	}
	sum, ownSum := sha256.Sum256(body), sha256.Sum256(own)
	etag := fmt.Sprintf(`"%d.%s%s"`, d.Version, hex.EncodeToString(ownSum[:6]), hex.EncodeToString(sum[:6]))
	return rendering.NewWithETag(rendering.JSONType, body, etag), nil
}

// ownPart is the version and document digest of a detail's tag, as
// sent or encoded ("" for a tag of another shape).
func ownPart(tag string) string {
	t := strings.Trim(tag, `"`)
	if i := strings.IndexByte(t, '-'); i >= 0 {
		t = t[:i]
	}
	dot := strings.IndexByte(t, '.')
	if dot < 0 || len(t)-dot-1 != 24 {
		return ""
	}
	return t[:dot+13]
}

// editorialWrite serves a publication route: no body, the document after.
func (h *Handler) editorialWrite(write func(ctx context.Context, id string) (document.Document, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		d, err := write(c, c.Param("id"))
		if err != nil {
			fail(c, err)
			return
		}
		h.written(c, http.StatusOK, d)
	}
}

// maxFullRevisions bounds a page of whole revisions (?full=true): each
// holds a document (up to several MiB of content, more once escaped), and
// the page is built in memory; nextBefore carries on from where it ends.
const maxFullRevisions = 20

func (h *Handler) revisions(c *gin.Context) {
	before, err1 := queryInt(c, "before", 0)
	limit, err2 := queryInt(c, "limit", 50)
	full := c.Query("full")
	if err := errors.Join(err1, err2); err != nil || limit < 1 || limit > 200 || before < 0 || (full != "" && full != "true" && full != "false") {
		httpx.Fail(c, problem.BadRequest("before must be a revision number, limit a number from 1 to 200, full true or false"))
		return
	}
	if full == "true" {
		limit = min(limit, maxFullRevisions)
	}
	page, err := h.svc.Revisions(c, c.Param("id"), before, int(limit), full == "true")
	if err != nil {
		fail(c, err)
		return
	}
	revs, next := page.Revisions, page.NextBefore
	if full == "true" { // the store read them whole anyway
		out := revisionFullPage{Revisions: make([]revisionDetail, len(revs)), NextBefore: next}
		for i, r := range revs {
			out.Revisions[i] = toRevisionDetail(r)
		}
		serveJSON(c, out)
		return
	}
	out := revisionPage{Revisions: make([]revisionShort, len(revs)), NextBefore: next}
	for i, r := range revs {
		out.Revisions[i] = toRevisionShort(r)
	}
	serveJSON(c, out)
}

func (h *Handler) revision(c *gin.Context) {
	rev, ok := revParam(c)
	if !ok {
		return
	}
	r, err := h.svc.Revision(c, c.Param("id"), rev)
	if err != nil {
		fail(c, err)
		return
	}
	serveJSON(c, toRevisionDetail(r))
}

func (h *Handler) restoreRevision(c *gin.Context) {
	rev, ok := revParam(c)
	if !ok {
		return
	}
	d, drop, err := h.svc.RestoreRevision(c, c.Param("id"), rev)
	if err != nil {
		fail(c, err)
		return
	}
	h.put(c, d)
	c.Header("ETag", document.ETag(d.Version))
	c.JSON(http.StatusOK, restoredRevision{documentAdmin: toDetailOf(h.lib.Current(), &d, true).(documentAdmin),
		Dropped: dropped{TagsIDs: orNone(drop.TagsIDs), MediaIDs: orNone(drop.MediaIDs), RelatedIDs: orNone(drop.RelatedIDs)}})
}

func revParam(c *gin.Context) (int64, bool) {
	rev, err := strconv.ParseInt(c.Param("rev"), 10, 64)
	if err != nil || rev < 1 {
		fail(c, document.ErrRevisionNotFound)
		return 0, false
	}
	return rev, true
}

func queryInt(c *gin.Context, name string, def int64) (int64, error) {
	raw, ok := c.GetQuery(name)
	if !ok {
		return def, nil
	}
	return strconv.ParseInt(raw, 10, 64)
}

// editorialProblem is the problem for an error of the editorial workflow,
// nil for another error (fail has the one mapping; this is its part).
func editorialProblem(err error, id string) *problem.Problem {
	switch {
	case errors.Is(err, document.ErrVersionMismatch):
		return problem.New(http.StatusPreconditionFailed, "precondition_failed",
			fmt.Sprintf("document '%s' changed since it was read (If-Match); read it again and retry", id))
	case errors.Is(err, document.ErrRevisionNotFound):
		return problem.New(http.StatusNotFound, "revision_not_found", fmt.Sprintf("document '%s' has no such revision", id))
	case errors.Is(err, document.ErrRevisionUnusable):
		return problem.Conflict("revision_unusable", err.Error())
	case errors.Is(err, document.ErrNothingToPublish):
		return problem.Conflict("nothing_to_publish", fmt.Sprintf("document '%s' is published and has no pending changes", id))
	case errors.Is(err, document.ErrNotPublished):
		return problem.Conflict("not_published", fmt.Sprintf("document '%s' is a draft already", id))
	case errors.Is(err, document.ErrNoDraft):
		return problem.Conflict("no_pending_changes", fmt.Sprintf("document '%s' has no pending changes to discard", id))
	}
	return nil
}

// serveJSON answers a back-office read as the other reads are: private,
// conditional (ETag), compressed when asked (Vary: Accept-Encoding).
func serveJSON(c *gin.Context, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		fail(c, err)
		return
	}
	rendering.New(rendering.JSONType, body).Serve(c.Writer, c.Request, rendering.Private)
}
