package httpapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/validation"
	"github.com/doclib/services/taxonomy/internal/setting"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// The import routes (`doclib import`): a record written as the export read
// it, with its id and dates; 201 when stored, 200 when the same record was
// there already (an import run again changes nothing), 409 import_conflict
// when another record has its id.
type (
	categoryImport struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		CreatedAt string `json:"createdAt"`
		UpdatedAt string `json:"updatedAt"`
	}
	tagImport struct {
		ID         string `json:"id"`
		Name       string `json:"name"`
		CategoryID string `json:"categoryId"`
		CreatedAt  string `json:"createdAt"`
		UpdatedAt  string `json:"updatedAt"`
	}
	configImport struct {
		ModeratorEmail string `json:"moderatorEmail"`
		UpdatedAt      string `json:"updatedAt"`
		UpdatedBy      string `json:"updatedBy"`
	}
)

// registerImport adds the taxonomy's import routes.
func (h *Handler) registerImport(r gin.IRouter) {
	r.PUT("/bo/import/tags-categories/:id", h.changed, h.importCategory)
	r.PUT("/bo/import/tags/:id", h.changed, h.importTag)
}

func (h *Handler) importCategory(c *gin.Context) {
	var in categoryImport
	if !httpx.BindJSON(c, &in) {
		return
	}
	var errs validation.Errors
	samePathID(&errs, c, in.ID)
	cat := tag.Category{ID: in.ID, Name: in.Name, CreatedAt: httpx.ParseTime(&errs, "createdAt", in.CreatedAt),
		UpdatedAt: httpx.ParseTime(&errs, "updatedAt", in.UpdatedAt)}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	created, err := h.svc.ImportCategory(c, cat)
	if err != nil {
		failImport(c, err)
		return
	}
	c.JSON(importStatus(created), toAdminCategory(cat))
}

func (h *Handler) importTag(c *gin.Context) {
	var in tagImport
	if !httpx.BindJSON(c, &in) {
		return
	}
	var errs validation.Errors
	samePathID(&errs, c, in.ID)
	t := tag.Tag{ID: in.ID, Name: in.Name, CategoryID: in.CategoryID, CreatedAt: httpx.ParseTime(&errs, "createdAt", in.CreatedAt),
		UpdatedAt: httpx.ParseTime(&errs, "updatedAt", in.UpdatedAt)}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	created, err := h.svc.ImportTag(c, t)
	if errors.Is(err, tag.ErrCategoryNotFound) {
		fail(c, validation.Errors{{Field: "categoryId", Message: "is not a tag category"}})
		return
	}
	if err != nil {
		failImport(c, err)
		return
	}
	c.JSON(importStatus(created), toAdminTag(t))
}

func samePathID(errs *validation.Errors, c *gin.Context, id string) {
	if id != c.Param("id") {
		errs.Add("id", "must be the id in the path")
	}
}

func importStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

func failImport(c *gin.Context, err error) {
	if errors.Is(err, tag.ErrImportConflict) || errors.Is(err, setting.ErrImportConflict) {
		httpx.Abort(c, err, func(err error) *problem.Problem { return problem.Conflict("import_conflict", err.Error()) })
		return
	}
	fail(c, err)
}

// importConfig stores the settings as the archive holds them.
func (h *Settings) importConfig(c *gin.Context) {
	defer h.cache.Invalidate()
	var in configImport
	if !httpx.BindJSON(c, &in) {
		return
	}
	var errs validation.Errors
	set := setting.Settings{ModeratorEmail: in.ModeratorEmail, UpdatedBy: in.UpdatedBy,
		UpdatedAt: httpx.ParseTime(&errs, "updatedAt", in.UpdatedAt)}
	if err := errs.Err(); err != nil {
		fail(c, err)
		return
	}
	if _, err := h.svc.Import(c, set); err != nil {
		failImport(c, err)
		return
	}
	c.JSON(http.StatusOK, toAdminConfig(set))
}
