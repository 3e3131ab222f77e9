package httpapi

import (
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/rendering"
	"github.com/doclib/services/catalog/internal/document"
)

// TextType is the Content-Type of a document's words.
const TextType = "text/plain; charset=utf-8"

// registerReads adds the public reads made for an app's offline use: the
// bundle of its first start, which streams a file of any size (no request
// budget), and the words of a document.
func (h *Handler) registerReads(r gin.IRouter) {
	httpx.GET(r, "/public/bundle", httpx.StrictQuery, h.bundle)
	httpx.GET(r.Group("", httpx.Budget(httpx.RequestBudget)), "/public/documents/:id/text", h.text)
}

// text serves GET /public/documents/:id/text: the words of a MARKDOWN or
// HTML document without markup (document.PlainText), made once per
// snapshot, compressed as the client accepts, with a strong ETag (a digest
// of the words) and 304. A PDF's words are its media's text; a LINK has
// none.
func (h *Handler) text(c *gin.Context) {
	s, d, err := h.find(c, sideOf(false))
	if err != nil {
		fail(c, err)
		return
	}
	switch {
	case d.Type == document.PDF && d.File != nil:
		httpx.Fail(c, problem.New(http.StatusNotFound, "no_text", fmt.Sprintf(
			"document '%s' is a PDF: its words are its file's, at /public/medias/%s/text", d.ID, d.File.ID)))
		return
	case !d.Type.Inline():
		httpx.Fail(c, problem.New(http.StatusNotFound, "no_text", fmt.Sprintf("document '%s' is a link: it has no words here", d.ID)))
		return
	}
	r, err := s.Memo("text:"+d.ID, func() (any, error) {
		words, err := document.PlainText(c, d.Type, d.Content)
		if err != nil {
			return nil, err
		}
		return rendering.New(TextType, []byte(words)), nil
	})
	if err != nil {
		fail(c, err)
		return
	}
	r.(*rendering.Rendering).Serve(c.Writer, c.Request, rendering.Public)
}
