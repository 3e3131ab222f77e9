package pages

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
)

// uploadResult is what became of one file of an upload.
type uploadResult struct {
	File    string
	Media   boclient.Media
	Existed bool // the same bytes were in the library already
	Err     *boclient.APIError
}

type mediaData struct {
	Medias  []boclient.Media
	Uploads []uploadResult
	// Refused is the media whose deletion the API refused, and why.
	RefusedID string
	Refused   *boclient.APIError
	// UsedBy are the documents the refusal names, by title.
	UsedBy []boclient.DocumentShort
}

// RefusedFor is the API's reason for refusing to delete media id.
func (d mediaData) RefusedFor(id string) *boclient.APIError {
	if d.RefusedID != id {
		return nil
	}
	return d.Refused
}

func (p *Pages) mediaPage(c *gin.Context) {
	p.showMedia(c, http.StatusOK, mediaData{})
}

// showMedia renders the media page with d's upload results or refusal.
func (p *Pages) showMedia(c *gin.Context, status int, d mediaData) {
	if s, ok := current(c); ok {
		ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
		defer cancel()
		medias, err := p.cfg.API.Medias(ctx, s.Token)
		if err != nil && d.Uploads == nil && d.Refused == nil {
			p.fail(c, err)
			return
		}
		d.Medias = medias
	}
	notice := ""
	if c.Query("done") == "deleted" {
		notice = "The media was deleted."
	}
	p.render(c, status, "media", view{Title: "Media", Notice: notice, Data: d})
}

// uploadMedia sends each file of the form to the API, one after the
// other, and says what became of each.
func (p *Pages) uploadMedia(c *gin.Context) {
	s, ok := current(c)
	if !ok {
		p.render(c, http.StatusUnauthorized, "error", view{Title: "Session ended", Error: sessionEnded})
		return
	}
	if err := parseForm(c); err != nil { // over the limit: a 413 that says it
		e := boclient.AsAPIError(err)
		p.showMedia(c, status(e), mediaData{Uploads: []uploadResult{{Err: e}}})
		return
	}
	form := c.Request.MultipartForm
	if form == nil || len(form.File["files"]) == 0 {
		e := &boclient.APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed", Detail: "Pick one or more files to upload."}
		p.showMedia(c, http.StatusUnprocessableEntity, mediaData{Uploads: []uploadResult{{Err: e}}})
		return
	}
	var results []uploadResult
	for _, fh := range form.File["files"] {
		results = append(results, p.uploadOne(c.Request.Context(), s.Token, fh))
	}
	p.showMedia(c, http.StatusOK, mediaData{Uploads: results})
}

func (p *Pages) uploadOne(parent context.Context, token string, fh *multipart.FileHeader) uploadResult {
	r := uploadResult{File: fh.Filename}
	f, err := fh.Open()
	if err != nil {
		r.Err = boclient.AsAPIError(err)
		return r
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(parent, p.cfg.Timeout)
	defer cancel()
	r.Media, r.Existed, err = p.cfg.API.UploadMedia(ctx, token, fh.Filename, f)
	if err != nil {
		r.Err = explain(boclient.AsAPIError(err))
	}
	return r
}

// deleteMedia deletes a media; a refusal (409 media_in_use names the
// documents) is shown on its row.
func (p *Pages) deleteMedia(c *gin.Context) {
	s, ctx, cancel, ok := p.writing(c)
	if !ok {
		return
	}
	defer cancel()
	if err := p.cfg.API.DeleteMedia(ctx, s.Token, c.Param("id")); err != nil {
		e := explain(boclient.AsAPIError(err))
		if e.Status == http.StatusUnauthorized {
			p.fail(c, err)
			return
		}
		d := mediaData{RefusedID: c.Param("id"), Refused: e}
		if e.Code == "media_in_use" {
			d.UsedBy = p.named(ctx, s.Token, e.Detail)
		}
		p.showMedia(c, status(e), d)
		return
	}
	c.Redirect(http.StatusSeeOther, Base+"/media?"+url.Values{"done": {"deleted"}}.Encode())
}

// named are the documents whose ids text names (the detail of a
// media_in_use refusal names them by id), so that the page can say their
// titles; none when the listing cannot be read.
func (p *Pages) named(ctx context.Context, token, text string) []boclient.DocumentShort {
	docs, err := p.cfg.API.Documents(ctx, token)
	if err != nil {
		return nil
	}
	var out []boclient.DocumentShort
	for _, d := range docs {
		if d.ID != "" && strings.Contains(text, d.ID) {
			out = append(out, d)
		}
	}
	return out
}

// downloadMedia passes a media's bytes through with the person's token
// (the browser has none); always as an attachment, never shown inline.
func (p *Pages) downloadMedia(c *gin.Context) {
	s, _ := current(c)
	res, err := p.cfg.API.DownloadMedia(c.Request.Context(), s.Token, c.Param("id"))
	if err != nil {
		p.fail(c, err)
		return
	}
	defer res.Body.Close()
	h := c.Writer.Header()
	for _, k := range []string{"Content-Type", "Content-Length", "ETag", "Last-Modified"} {
		if v := res.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	h.Set("Content-Disposition", attachment(res.Header.Get("Content-Disposition")))
	h.Set("X-Content-Type-Options", "nosniff")
	c.Status(http.StatusOK)
	if _, err := io.Copy(c.Writer, res.Body); err != nil {
		p.cfg.Log.Warn("download cut short", "media", c.Param("id"), "err", err)
	}
}

// attachment keeps the API's file name but never lets the file open inline.
func attachment(disposition string) string {
	if rest, ok := strings.CutPrefix(disposition, "inline"); ok {
		return "attachment" + rest
	}
	if strings.HasPrefix(disposition, "attachment") {
		return disposition
	}
	return "attachment"
}

// thumbable reports whether a media of type mime has a picture: an image,
// or a PDF (its first page).
func thumbable(mime string) bool {
	return mime == "application/pdf" || strings.HasPrefix(mime, "image/")
}

// thumb is the address of a media's thumbnail: its thumb rendition, from
// the public API the admin listener serves too (the console's own origin).
func thumb(id string) string {
	return "/public/medias/" + url.PathEscape(id) + "/download?preset=thumb"
}

// imageRef is how a MARKDOWN or HTML text refers to an attached image:
// the address of its card rendition on the public API, relative, as the
// app resolves it against the API it reads (and the preview against the
// console's origin, which serves the public API too).
func imageRef(id string) string {
	return "/public/medias/" + url.PathEscape(id) + "/download?preset=card"
}

// size says a byte count the way people read it.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
