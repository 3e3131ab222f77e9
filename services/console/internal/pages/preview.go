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
// (the Preview button, without script): nothing is saved.
func (p *Pages) showPreview(c *gin.Context, ctx context.Context, token string, f form) {
	d := editData{Form: f}
	pv, err := p.cfg.API.PreviewDocument(ctx, token, f.Type, f.Content)
	if err != nil {
		e := explain(boclient.AsAPIError(err))
		d.PreviewError = previewError(e)
	} else {
		d.Preview, d.Previewed = pv.HTML, true
	}
	_ = p.choices(ctx, token, &d)
	p.showForm(c, http.StatusOK, d)
}

// storedPreview is the preview of a stored text shown when the edit page
// opens, from the API (Markdown rendered); a viewer may ask it too (the
// preview changes nothing).
func (p *Pages) storedPreview(ctx context.Context, s session.Session, d *editData) {
	if d.Form.Type != "MARKDOWN" && d.Form.Type != "HTML" {
		return
	}
	if pv, err := p.cfg.API.PreviewDocument(ctx, s.Token, d.Form.Type, d.Form.Content); err == nil {
		d.Preview, d.Previewed = pv.HTML, true
	}
}
