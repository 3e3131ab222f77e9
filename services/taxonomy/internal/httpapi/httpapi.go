// Package httpapi serves the taxonomy over HTTP: the public and back-office
// tag and category routes (authenticated by the gateway, not here) and the
// internal lookup other services use. It owns the JSON shapes and the one
// mapping from domain errors to problem+json.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/lookup"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// How fresh the rendered categories are. A public read may lag a write
// through another replica by publicLag, unless it asks for a revalidated
// answer (Cache-Control: no-cache, as the gateway does after a back-office
// write through it); a back-office read compares the revision every time,
// so an author sees their own write at once through any replica. maxAge renders again even though the revision did not move,
// should a bump have been lost.
const (
	publicLag = 100 * time.Millisecond
	maxAge    = time.Minute
)

// Revisioner tells when categories or tags last changed (the store does).
type Revisioner interface {
	Revision(ctx context.Context) (int64, error)
}

// Handler holds the taxonomy use cases and the rendered categories.
type Handler struct {
	svc        *tag.Service
	categories *rendering.Cache[categories]
}

// categories is every category with its tags, rendered for each side.
type categories struct{ public, admin *rendering.Rendering }

// New returns a Handler.
func New(svc *tag.Service, rev Revisioner) *Handler {
	h := &Handler{svc: svc}
	h.categories = &rendering.Cache[categories]{Load: h.render, Revision: rev.Revision, MaxAge: maxAge}
	return h
}

// Register adds the routes to r; every GET answers HEAD too.
func (h *Handler) Register(r gin.IRouter) {
	r = r.Group("", httpx.Budget(httpx.RequestBudget)) // one time budget per request
	httpx.GET(r, "/public/tags-categories", h.publicCategories)

	httpx.GET(r, "/bo/tags-categories", h.adminCategories)
	r.POST("/bo/tags-categories", h.changed, h.createCategory)
	r.PATCH("/bo/tags-categories/:id", h.changed, h.renameCategory)
	r.DELETE("/bo/tags-categories/:id", h.changed, h.deleteCategory)
	r.POST("/bo/tags", h.changed, h.createTag)
	r.PATCH("/bo/tags/:id", h.changed, h.renameTag)
	r.DELETE("/bo/tags/:id", h.changed, h.deleteTag)
	h.registerImport(r)

	httpx.GET(r, "/internal/tags", h.lookupTags)
}

// changed wraps every write: whatever its answer (a failed write may have
// written part), this replica renders the categories again at its next
// read instead of within publicLag.
func (h *Handler) changed(c *gin.Context) {
	c.Next()
	h.categories.Invalidate()
}

// render reads every category once and renders both sides' answers.
func (h *Handler) render(ctx context.Context) (categories, error) {
	cats, err := h.svc.Categories(ctx)
	if err != nil {
		return categories{}, err
	}
	public := make([]publicCategory, len(cats))
	for i, cat := range cats {
		public[i] = toPublicCategory(cat)
	}
	var out categories
	if out.public, err = rendering.JSON(public); err != nil {
		return categories{}, err
	}
	if out.admin, err = renderAdmin(cats); err != nil {
		return categories{}, err
	}
	return out, nil
}

// renderAdmin renders GET /bo/tags-categories.
func renderAdmin(cats []tag.Category) (*rendering.Rendering, error) {
	admin := make([]adminCategory, len(cats))
	for i, cat := range cats {
		admin[i] = toAdminCategory(cat)
	}
	return rendering.JSON(admin)
}

// unchanged is the check of a write to a tag or category with If-Match:
// neither has a GET of its own, and the tag names GET
// /bo/tags-categories, where the back-office reads them, as it is when
// the write runs (in its transaction). Nil without If-Match.
func unchanged(c *gin.Context) tag.Check {
	v := ifMatch(c)
	if v == "" {
		return nil
	}
	return func(cats []tag.Category) error {
		r, err := renderAdmin(cats)
		if err != nil {
			return err
		}
		if !matches(v, r) {
			return errPrecondition
		}
		return nil
	}
}

func (h *Handler) publicCategories(c *gin.Context) {
	cats, err := h.categories.Get(c, rendering.MaxLag(c.Request, publicLag))
	if err != nil {
		fail(c, err)
		return
	}
	cats.public.Serve(c.Writer, c.Request, rendering.Public)
}

func (h *Handler) adminCategories(c *gin.Context) {
	cats, err := h.categories.Get(c, 0)
	if err != nil {
		fail(c, err)
		return
	}
	cats.admin.Serve(c.Writer, c.Request, rendering.Private)
}

func (h *Handler) createCategory(c *gin.Context) {
	var in categoryCreate
	if !httpx.BindJSON(c, &in) {
		return
	}
	cat, err := h.svc.CreateCategory(c, in.ID, in.Name)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", "/bo/tags-categories/"+cat.ID)
	c.JSON(http.StatusCreated, toAdminCategory(cat))
}

func (h *Handler) renameCategory(c *gin.Context) {
	var in nameUpdate
	if !httpx.BindJSON(c, &in) {
		return
	}
	cat, err := h.svc.RenameCategory(c, c.Param("id"), in.Name, unchanged(c))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAdminCategory(cat))
}

func (h *Handler) deleteCategory(c *gin.Context) {
	if err := h.svc.DeleteCategory(c, c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *Handler) createTag(c *gin.Context) {
	var in tagCreate
	if !httpx.BindJSON(c, &in) {
		return
	}
	t, err := h.svc.CreateTag(c, in.ID, in.Name, in.CategoryID)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Location", "/bo/tags/"+t.ID)
	c.JSON(http.StatusCreated, toAdminTag(t))
}

func (h *Handler) renameTag(c *gin.Context) {
	var in nameUpdate
	if !httpx.BindJSON(c, &in) {
		return
	}
	t, err := h.svc.RenameTag(c, c.Param("id"), in.Name, unchanged(c))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, toAdminTag(t))
}

func (h *Handler) deleteTag(c *gin.Context) {
	if err := h.svc.DeleteTag(c, c.Param("id")); err != nil {
		fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

// lookupTags answers GET /internal/tags?ids=a,b,c with the tags among ids
// that exist: other services check their references with it.
func (h *Handler) lookupTags(c *gin.Context) {
	ids, err := lookup.IDs(c.Request.URL.Query())
	if err != nil {
		httpx.Fail(c, problem.BadRequest(err.Error()))
		return
	}
	tags, err := h.svc.Tags(c, ids)
	if err != nil {
		fail(c, err)
		return
	}
	// With the times: the catalog tells a tag created anew under an id
	// from the deleted one by its createdAt.
	out := make([]adminTag, len(tags))
	for i, t := range tags {
		out[i] = toAdminTag(t)
	}
	c.JSON(http.StatusOK, out)
}

// fail answers with the problem for err: the one place where the taxonomy's
// errors get their HTTP meaning.
func fail(c *gin.Context, err error) {
	httpx.Abort(c, err, func(err error) *problem.Problem {
		id := c.Param("id")
		switch {
		case errors.Is(err, errPrecondition) && c.FullPath() == "/bo/config":
			return preconditionFailed("the settings")
		case errors.Is(err, errPrecondition):
			return preconditionFailed("the tag categories")
		case errors.Is(err, tag.ErrCategoryNotFound):
			return problem.NotFound(fmt.Sprintf("there is no tag category '%s'", id))
		case errors.Is(err, tag.ErrTagNotFound):
			return problem.NotFound(fmt.Sprintf("there is no tag '%s'", id))
		case errors.Is(err, tag.ErrDuplicateID):
			p := problem.Conflict("conflict", "the id is already used")
			p.Errors = []problem.FieldError{{Field: "id", Message: "is already used"}}
			return p
		case errors.Is(err, tag.ErrDuplicateName):
			p := problem.Conflict("conflict", "the name is already used (names are unique regardless of case)")
			p.Errors = []problem.FieldError{{Field: "name", Message: "is already used"}}
			return p
		case httpx.Writes(c.Request) && mongox.IsUnavailable(err):
			// The write may have reached the database: it may apply it yet.
			return httpx.OutcomeUnknown("the taxonomy database")
		}
		return problem.Common(err, "taxonomy database", mongox.IsUnavailable)
	})
}
