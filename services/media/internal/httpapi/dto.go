package httpapi

import (
	"net/url"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/services/media/internal/media"
)

// Response bodies (FileMedia, FileMediaAdmin).
type (
	fileMedia struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		MimeType string `json:"mimeType"`
		Size     int64  `json:"size"`
		SHA256   string `json:"sha256"`
		// Width and Height: images only (CONTRACT.md §10).
		Width  int `json:"width,omitempty"`
		Height int `json:"height,omitempty"`
		// PageCount, PageWidth and PageHeight: PDFs only (points).
		PageCount  int     `json:"pageCount,omitempty"`
		PageWidth  float64 `json:"pageWidth,omitempty"`
		PageHeight float64 `json:"pageHeight,omitempty"`
		// Text: the public URL of a PDF's text.
		Text string `json:"text,omitempty"`
		// Renditions: the download URL of each preset, images only.
		Renditions map[string]string `json:"renditions,omitempty"`
	}
	// lookupMedia is an item of the internal lookup.
	lookupMedia struct {
		fileMedia
		Deleting bool `json:"deleting,omitempty"`
	}
	fileMediaAdmin struct {
		fileMedia
		CreatedAt string `json:"createdAt"`
		UpdatedAt string `json:"updatedAt"`
		CreatedBy string `json:"createdBy"`
		UpdatedBy string `json:"updatedBy"`
	}
)

func (h *Handler) toFileMedia(m media.Media) fileMedia {
	f := fileMedia{ID: m.ID, Name: m.Name, MimeType: m.MimeType, Size: m.Size, SHA256: m.SHA256, Width: m.Width, Height: m.Height,
		PageCount: m.Pages, PageWidth: m.PageWidth, PageHeight: m.PageHeight, Renditions: h.presetLinks(m)}
	if h.renditions != nil && m.MimeType == media.PDFType && h.renditions.Renders(m.MimeType) {
		f.Text = "/public/medias/" + m.ID + "/text"
	}
	return f
}

// presetLinks are the public download URLs of every preset of m, when m
// gets renditions.
func (h *Handler) presetLinks(m media.Media) map[string]string {
	if h.renditions == nil || !h.renditions.Renders(m.MimeType) {
		return nil
	}
	links := map[string]string{}
	for name := range h.renditions.Config().Presets {
		links[name] = "/public/medias/" + m.ID + "/download?preset=" + url.QueryEscape(name)
	}
	return links
}

func (h *Handler) toFileMediaAdmin(m media.Media) fileMediaAdmin {
	return fileMediaAdmin{fileMedia: h.toFileMedia(m),
		CreatedAt: httpx.FormatTime(m.CreatedAt), UpdatedAt: httpx.FormatTime(m.UpdatedAt),
		CreatedBy: m.CreatedBy, UpdatedBy: m.UpdatedBy}
}
