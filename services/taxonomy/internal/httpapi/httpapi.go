// Package httpapi serves the taxonomy over HTTP: the public and back-office
// tag and category routes (authenticated by the gateway, not here) and the
// internal lookup other services use. It owns the JSON shapes and the one
// mapping from domain errors to problem+json.
package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// MaxLookupIDs bounds one internal lookup.
const MaxLookupIDs = 500

// Handler holds the taxonomy use cases and an optional hook run after each
// deletion (the outbox relay's nudge).
type Handler struct {
	svc       *tag.Service
	onDeleted func()
}

// New returns a Handler. onDeleted may be nil.
func New(svc *tag.Service, onDeleted func()) *Handler {
	if onDeleted == nil {
		onDeleted = func() {}
	}
	return &Handler{svc: svc, onDeleted: onDeleted}
}

// Register adds the routes to r.
func (h *Handler) Register(r gin.IRouter) {
	r.GET("/public/tags-categories", h.publicCategories)

	r.GET("/bo/tags-categories", h.adminCategories)
	r.POST("/bo/tags-categories", h.createCategory)
	r.PATCH("/bo/tags-categories/:id", h.renameCategory)
	r.DELETE("/bo/tags-categories/:id", h.deleteCategory)
	r.POST("/bo/tags", h.createTag)
	r.PATCH("/bo/tags/:id", h.renameTag)
	r.DELETE("/bo/tags/:id", h.deleteTag)

	r.GET("/internal/tags", h.lookupTags)
}

func (h *Handler) publicCategories(c *gin.Context) {
	cats, err := h.svc.Categories(c)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]publicCategory, len(cats))
	for i, cat := range cats {
		out[i] = toPublicCategory(cat)
	}
	c.JSON(http.StatusOK, out)
}

func (h *Handler) adminCategories(c *gin.Context) {
	cats, err := h.svc.Categories(c)
	if err != nil {
		fail(c, err)
		return
	}
	out := make([]adminCategory, len(cats))
	for i, cat := range cats {
		out[i] = toAdminCategory(cat)
	}
	c.JSON(http.StatusOK, out)
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
	cat, err := h.svc.RenameCategory(c, c.Param("id"), in.Name)
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
	h.onDeleted()
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
	t, err := h.svc.RenameTag(c, c.Param("id"), in.Name)
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
	h.onDeleted()
	c.Status(http.StatusNoContent)
}

// lookupTags answers GET /internal/tags?ids=a,b,c with the tags among ids
// that exist: other services check their references with it.
func (h *Handler) lookupTags(c *gin.Context) {
	var ids []string
	for _, v := range c.QueryArray("ids") {
		for _, id := range strings.Split(v, ",") {
			if id != "" {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) > MaxLookupIDs {
		httpx.Fail(c, problem.BadRequest(fmt.Sprintf("at most %d ids per lookup", MaxLookupIDs)))
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
		}
		return httpx.CommonProblem(err, "taxonomy database")
	})
}
