package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/validation"
	"github.com/doclib/services/catalog/internal/document"
)

// documentImport is a back-office detail (DocumentAdmin) as an export read
// it; the import routes take it back as is.
type documentImport struct {
	ID          string          `json:"id"`
	Title       string          `json:"title"`
	Type        string          `json:"type"`
	URL         string          `json:"url"`
	TagsIDs     []string        `json:"tagsIds"`
	Content     string          `json:"content"`
	Sources     []string        `json:"sources"`
	ImagesIDs   []string        `json:"imagesIds"`
	File        *fileRef        `json:"file"`
	RelatedIDs  []string        `json:"relatedIds"`
	IsDeleted   bool            `json:"isDeleted"`
	CreatedAt   string          `json:"createdAt"`
	UpdatedAt   string          `json:"updatedAt"`
	CreatedBy   string          `json:"createdBy"`
	UpdatedBy   string          `json:"updatedBy"`
	DeletedAt   string          `json:"deletedAt"`
	DeletedBy   *string         `json:"deletedBy"`
	Status      string          `json:"status"`
	Version     int64           `json:"version"`
	PublishedAt string          `json:"publishedAt"`
	PublishAt   string          `json:"publishAt"`
	UnpublishAt string          `json:"unpublishAt"`
	Draft       *documentImport `json:"draft"`
}

// revisionImport is a revision (GET /bo/documents/{id}/revisions/{rev}).
type revisionImport struct {
	Version  int64          `json:"version"`
	At       string         `json:"at"`
	By       string         `json:"by"`
	Why      string         `json:"why"`
	Document documentImport `json:"document"`
}

// content is the part a draft holds too.
func (in documentImport) content() document.Document {
	d := document.Document{ID: in.ID, Title: in.Title, Type: document.Type(in.Type), URL: in.URL, TagsIDs: in.TagsIDs,
		Sources: in.Sources, RelatedIDs: in.RelatedIDs}
	if d.Type.Inline() {
		d.Content, d.ImagesIDs = in.Content, in.ImagesIDs
	}
	if in.File != nil {
		d.File = &document.File{ID: in.File.ID, Name: in.File.Name}
	}
	return d
}

func (in documentImport) domain(errs *validation.Errors) document.Document {
	d := in.content()
	d.IsDeleted, d.CreatedBy, d.UpdatedBy = in.IsDeleted, in.CreatedBy, in.UpdatedBy
	d.CreatedAt = httpx.ParseTime(errs, "createdAt", in.CreatedAt)
	d.UpdatedAt = httpx.ParseTime(errs, "updatedAt", in.UpdatedAt)
	d.DeletedAt = httpx.ParseOptionalTime(errs, "deletedAt", in.DeletedAt)
	if in.DeletedBy != nil {
		d.DeletedBy = *in.DeletedBy
	}
	if in.IsDeleted != !d.DeletedAt.IsZero() {
		errs.Add("deletedAt", "is given exactly when isDeleted is true")
	}
	d.Status, d.Version = document.Status(in.Status), in.Version
	d.PublishedAt = httpx.ParseOptionalTime(errs, "publishedAt", in.PublishedAt)
	d.PublishAt = httpx.ParseOptionalTime(errs, "publishAt", in.PublishAt)
	d.UnpublishAt = httpx.ParseOptionalTime(errs, "unpublishAt", in.UnpublishAt)
	if in.Draft != nil {
		p := in.Draft.content()
		p.ID, p.Type = "", d.Type // pending changes are stored without an id (contentOf)
		if !d.Type.Inline() {
			p.Content, p.ImagesIDs = "", nil
		} else {
			p.Content, p.ImagesIDs = in.Draft.Content, in.Draft.ImagesIDs
		}
		d.Draft = &p
	}
	return d
}

// domain is the revision of document id.
func (in revisionImport) domain(id string, errs *validation.Errors) document.Revision {
	return document.Revision{DocumentID: id, Version: in.Version,
		Change: document.Change{By: in.By, At: httpx.ParseTime(errs, "at", in.At), Why: in.Why},
		Doc:    in.Document.domain(errs)}
}

// documentEntry is an archive's document entry as doclib export wrote it:
// the document and its revisions, imported in one request.
type documentEntry struct {
	Document  documentImport   `json:"document"`
	Revisions []revisionImport `json:"revisions"`
}

func (h *Handler) registerImport(b gin.IRouter) {
	b.PUT("/bo/import/documents/:id", h.importDocument)
	b.PUT("/bo/import/documents/:id/revisions/:rev", h.importRevision)
	b.PUT("/bo/import/documents/:id/entry", h.importEntry)
}

func (h *Handler) importDocument(c *gin.Context) {
	var in documentImport
	if !httpx.BindJSONUpTo(c, &in, httpx.MaxImportJSONBody) {
		return
	}
	var errs validation.Errors
	h.finishImport(c, in.domain(&errs), errs)
}

// importEntry imports a document's revisions, then the document, through
// the same rules as the routes for each: one request instead of one per
// revision plus one.
func (h *Handler) importEntry(c *gin.Context) {
	var in documentEntry
	if !httpx.BindJSONUpTo(c, &in, httpx.MaxImportJSONBody) {
		return
	}
	var errs validation.Errors
	revs := make([]document.Revision, len(in.Revisions))
	for i, r := range in.Revisions {
		revs[i] = r.domain(c.Param("id"), &errs)
	}
	d := in.Document.domain(&errs)
	if d.ID != c.Param("id") { // checked before any revision is stored
		errs.Add("id", "must be the id in the path")
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	for _, r := range revs {
		if err := h.svc.ImportRevision(c, r); err != nil {
			fail(c, err)
			return
		}
	}
	h.finishImport(c, d, nil)
}

// finishImport stores d, unless errs or d's id is not the path's.
func (h *Handler) finishImport(c *gin.Context, d document.Document, errs validation.Errors) {
	if d.ID != c.Param("id") {
		errs.Add("id", "must be the id in the path")
	}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	stored, created, overdue, err := h.svc.Import(c, d)
	if err != nil {
		fail(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	h.writtenClearing(c, status, stored, overdue)
}

func (h *Handler) importRevision(c *gin.Context) {
	var in revisionImport
	if !httpx.BindJSONUpTo(c, &in, httpx.MaxImportJSONBody) {
		return
	}
	var errs validation.Errors
	rev, err := strconv.ParseInt(c.Param("rev"), 10, 64)
	if err != nil || rev != in.Version {
		errs.Add("version", "must be the revision number in the path")
	}
	r := in.domain(c.Param("id"), &errs)
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	if err := h.svc.ImportRevision(c, r); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}
