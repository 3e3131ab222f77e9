package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/catalog/internal/document"
)

// previewInput is the body of POST /bo/documents/preview.
type previewInput struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// previewOutput is a text as it would be stored and shown.
type previewOutput struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	HTML    string `json:"html"`
}

// preview renders an unsaved text with the sanitiser and Markdown reader
// the documents get; nothing is stored, so it never changes the library.
func (h *Handler) preview(c *gin.Context) {
	var in previewInput
	if !httpx.BindJSON(c, &in) {
		return
	}
	p, err := document.RenderPreview(in.Type, in.Content)
	if err != nil {
		fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, previewOutput{Type: in.Type, Content: p.Content, HTML: p.HTML})
}
