package pages

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/session"
)

// previewAnswer is what the edit page's script gets for the live preview.
type previewAnswer struct {
	HTML  string `json:"html"`
	Error string `json:"error,omitempty"`
}

// livePreview renders the posted text (type, content) through the API for
// the edit page's script; the page puts the HTML in its sandboxed frame.
func (p *Pages) livePreview(c *gin.Context) {
	s, ok := current(c)
	if !ok {
		c.JSON(http.StatusUnauthorized, previewAnswer{Error: sessionEnded.Detail})
		return
	}
	if err := parseForm(c); err != nil {
		e := boclient.AsAPIError(err)
		c.JSON(status(e), previewAnswer{Error: e.Detail})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	pv, err := p.cfg.API.PreviewDocument(ctx, s.Token, c.PostForm("type"), c.PostForm("content"))
	if err != nil {
		e := explain(boclient.AsAPIError(err))
		c.JSON(status(e), previewAnswer{Error: previewError(e)})
		return
	}
	c.JSON(http.StatusOK, previewAnswer{HTML: pv.HTML})
}

// previewError is the words of a failed preview.
func previewError(e *boclient.APIError) string {
	if m := e.Field("content"); m != "" {
		return "The preview could not be made: the content " + m + "."
	}
	return "The preview could not be made: " + e.Detail
}

// showPreview renders the edit page with the preview of the typed text
// (the Preview button, without script): nothing is saved. After a 412
// (the form says so) their version is shown again, with the fields that
// differ, so the next save is still knowingly over theirs.
func (p *Pages) showPreview(c *gin.Context, ctx context.Context, s session.Session, f form) {
	d := editData{Form: f}
	if c.PostForm("conflict") != "" && f.ID != "" {
		if cur, etag, err := p.cfg.API.Document(ctx, s.Token, f.ID); err == nil {
			cf := merge(&d.Form, nil, formOf(cur, etag)) // lists; the form was merged at the 412
			d.Current, d.Stored, d.Conflict = &cur, &cur, &cf
		}
	}
	p.storedPreview(ctx, s, &d)
	_ = p.choices(ctx, s.Token, &d)
	p.showForm(c, http.StatusOK, d)
}

// reshow renders the edit page again after a failed save, with what can
// be loaded: the choices, and the preview of the typed text.
func (p *Pages) reshow(c *gin.Context, ctx context.Context, s session.Session, status int, d editData) {
	_ = p.choices(ctx, s.Token, &d)
	p.storedPreview(ctx, s, &d)
	p.showForm(c, status, d)
}

// storedPreview is the preview of the form's text (stored, or typed and
// sent back), from the API (Markdown rendered); a viewer may ask it too (the
// preview changes nothing).
func (p *Pages) storedPreview(ctx context.Context, s session.Session, d *editData) {
	if d.Form.Type != "MARKDOWN" && d.Form.Type != "HTML" {
		return
	}
	pv, err := p.cfg.API.PreviewDocument(ctx, s.Token, d.Form.Type, d.Form.Content)
	if err != nil {
		d.PreviewError = previewError(explain(boclient.AsAPIError(err)))
		return
	}
	d.Preview, d.Previewed = pv.HTML, true
}
