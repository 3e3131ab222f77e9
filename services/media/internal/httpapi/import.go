package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/validation"
	"github.com/doclib/services/media/internal/media"
)

// maxImportRecord bounds the record part of an import.
const maxImportRecord = 64 << 10

// mediaImport is the "record" part of PUT /bo/import/medias/{id}: a
// FileMediaAdmin as an export read it.
type mediaImport struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MimeType  string `json:"mimeType"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
	CreatedBy string `json:"createdBy"`
	UpdatedBy string `json:"updatedBy"`
}

func (in mediaImport) domain(errs *validation.Errors) media.Media {
	return media.Media{ID: in.ID, Name: in.Name, MimeType: in.MimeType, Size: in.Size, SHA256: in.SHA256,
		CreatedAt: httpx.ParseTime(errs, "createdAt", in.CreatedAt), UpdatedAt: httpx.ParseTime(errs, "updatedAt", in.UpdatedAt),
		CreatedBy: in.CreatedBy, UpdatedBy: in.UpdatedBy}
}

// importMedia takes multipart/form-data: the part "record" (JSON) first,
// then the part "file", streamed to the storage and checked against the
// record's size and digest; 201 stored, 200 the same media was there.
func (h *Handler) importMedia(c *gin.Context) {
	if mt, _, err := mime.ParseMediaType(c.GetHeader("Content-Type")); err != nil || mt != "multipart/form-data" {
		httpx.Fail(c, problem.UnsupportedMediaType("this route takes multipart/form-data: the part 'record', then the part 'file'"))
		return
	}
	c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, h.svc.MaxSize()+multipartSlack+maxImportRecord)
	mr, err := c.Request.MultipartReader()
	if err != nil {
		httpx.Fail(c, problem.BadRequest("the multipart/form-data content type has no boundary"))
		return
	}
	rec, err := h.importRecord(c, mr)
	if err != nil {
		fail(c, err)
		return
	}
	part, err := mr.NextPart()
	if err != nil || part.FormName() != "file" {
		fail(c, media.ErrNoFile)
		return
	}
	m, created, err := h.svc.Import(c, rec, part)
	if err != nil {
		failImport(c, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	c.JSON(status, h.toFileMediaAdmin(m))
}

func (h *Handler) importRecord(c *gin.Context, mr *multipart.Reader) (media.Media, error) {
	part, err := mr.NextPart()
	if err != nil {
		return media.Media{}, h.bodyError(err)
	}
	if part.FormName() != "record" {
		return media.Media{}, validation.Errors{{Field: "record", Message: "must be the first part"}}
	}
	raw, err := io.ReadAll(io.LimitReader(part, maxImportRecord+1))
	if err != nil {
		return media.Media{}, h.bodyError(err)
	}
	var in mediaImport
	if len(raw) > maxImportRecord || json.Unmarshal(raw, &in) != nil {
		return media.Media{}, validation.Errors{{Field: "record", Message: "must be a media record (JSON)"}}
	}
	var errs validation.Errors
	rec := in.domain(&errs)
	if rec.ID != c.Param("id") {
		errs.Add("id", "must be the id in the path")
	}
	return rec, errs.Err()
}

func failImport(c *gin.Context, err error) {
	var (
		digest   *media.DigestError
		mismatch *media.TypeMismatchError
	)
	switch {
	case errors.Is(err, media.ErrImportConflict):
		httpx.Abort(c, err, func(err error) *problem.Problem { return problem.Conflict("import_conflict", err.Error()) })
	case errors.As(err, &digest):
		httpx.Abort(c, err, func(err error) *problem.Problem {
			p := problem.Validation("the file is not the one its record names", []problem.FieldError{{Field: "file", Message: err.Error()}})
			p.Code = "digest_mismatch"
			return p
		})
	case errors.As(err, &mismatch):
		httpx.Abort(c, err, func(err error) *problem.Problem {
			p := problem.Validation("the file is not of the type its record names", []problem.FieldError{{Field: "file", Message: err.Error()}})
			p.Code = "type_mismatch"
			return p
		})
	case errors.Is(err, media.ErrInvalidImport):
		fail(c, validation.Errors{{Field: "record", Message: err.Error()}})
	default:
		fail(c, err)
	}
}
