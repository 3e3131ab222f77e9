package pages

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
)

// Types are the document types, in the order the console offers them.
var Types = []string{"PDF", "LINK", "MARKDOWN", "HTML"}

// form is a document as typed in the edit form.
type form struct {
	// Key is a new document's Idempotency-Key, made when its form is
	// first shown: the same form posted twice makes one document.
	Key                                                  string
	ID, ETag, Type, Title, URL, FileID, Content, Sources string
	TagIDs, ImageIDs, RelatedIDs                         []string
	// Mode is where a save goes (workflow.go); PublishAt the scheduled
	// publication as a datetime-local value in the editor's time zone;
	// UnpublishAt the scheduled unpublication, as the API gave it.
	Mode, PublishAt, UnpublishAt string
	// RelatedQuery is what was typed to find documents to pin.
	RelatedQuery string
}

// editData is what the edit page shows.
type editData struct {
	Form       form
	Stored     *boclient.Document // who changed it and when; nil for a new one
	Categories []boclient.Category
	PDFs       []boclient.Media
	Images     []boclient.Media
	Others     []boclient.DocumentShort // live documents that may be pinned
	Err        *boclient.APIError
	Types      []string
	// Preview is the sanitised HTML of the text, shown in a sandboxed
	// frame when Previewed; PreviewError says why there is none.
	Preview      string
	Previewed    bool
	PreviewError string
	// Current is the version someone else saved after the form was
	// opened (a 412); the form then carries its ETag, so that saving
	// again replaces it deliberately.
	Current *boclient.Document
	// Conflict says, after a 412, which of their changes the form took
	// and which fields still differ from their version.
	Conflict *conflict
	// Zone is the editor's time zone (the schedule is typed in it).
	Zone *time.Location
	// Differs lists the fields in which the pending changes differ from
	// the live version.
	Differs []string
}

// Badges are the stored document's states.
func (d editData) Badges() []badge {
	if d.Stored == nil {
		return nil
	}
	s := d.Stored
	return badgesOf(s.Status, s.IsDeleted, s.Draft != nil, s.PublishAt)
}

// Attached are the images the form attaches, in its order (an id the
// media list does not know comes with its id as name).
func (d editData) Attached() []boclient.Media {
	return inOrder(d.Form.ImageIDs, d.Images, func(m boclient.Media) string { return m.ID },
		func(id string) boclient.Media { return boclient.Media{ID: id, Name: id} })
}

// inOrder are the items of all named by ids, in the order of ids; an id
// none has gives unknown(id).
func inOrder[T any](ids []string, all []T, idOf func(T) string, unknown func(string) T) []T {
	byID := make(map[string]T, len(all))
	for _, it := range all {
		byID[idOf(it)] = it
	}
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		it, ok := byID[id]
		if !ok {
			it = unknown(id)
		}
		out = append(out, it)
	}
	return out
}

// ImageCode is what the text of the form's type writes to show image m.
func (d editData) ImageCode(m boclient.Media) string {
	alt := strings.NewReplacer("[", "", "]", "", `"`, "", "<", "", ">", "").Replace(m.Name)
	if i := strings.LastIndex(alt, "."); i > 0 {
		alt = alt[:i]
	}
	if d.Form.Type == "HTML" {
		return `<img src="` + imageRef(m.ID) + `" alt="` + alt + `">`
	}
	return "![" + alt + "](" + imageRef(m.ID) + ")"
}

// When is an RFC 3339 time in the editor's time zone, in words.
func (d editData) When(rfc string) string { return exact(rfc, d.Zone) }

// Live is the stored document's live version (nil when it has no pending
// changes).
func (d editData) Live() *boclient.Document {
	if d.Stored == nil || d.Stored.Draft == nil {
		return nil
	}
	l := d.Stored.Live()
	return &l
}

// FieldError is the API's message about field, in the form's words, for
// the template to show next to it.
func (d editData) FieldError(field string) string {
	if d.Err == nil {
		return ""
	}
	var out []string
	for _, fe := range d.Err.Errors {
		if fe.Field == field || strings.HasPrefix(fe.Field, field+"[") || strings.HasPrefix(fe.Field, field+".") {
			out = append(out, sentence(fieldLabels[field], fe.Message))
		}
	}
	return strings.Join(out, " ")
}

// fieldLabels are the labels of the form's fields, by the API's names:
// the errors about them are said next to them, in these words.
var fieldLabels = map[string]string{"title": "The title", "url": "The address", "fileId": "The PDF file",
	"content": "The content", "sources": "The sources", "imagesIds": "An attached image", "tagsIds": "A tag",
	"relatedIds": "A pinned document", "publishAt": "The publication time", "unpublishAt": "The unpublication time"}

// sentence is an API message about a field as a sentence: "is required"
// becomes "The title is required."; a message that is a sentence already
// (a capital first) is kept.
func sentence(label, msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return ""
	}
	if r := msg[0]; r < 'A' || r > 'Z' {
		if label == "" {
			label = "This field"
		}
		msg = label + " " + msg
	}
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}

// pageError is the error the top of the edit page says: the problem's
// detail, and only the field errors the form shows nowhere else (each
// error is said once, next to its field when it has one).
func pageError(e *boclient.APIError) *boclient.APIError { return errorOnce(e, fieldLabels) }

// errorOnce is the error the top of a form's page says: the problem's
// detail, and only the field errors the form does not show next to one of
// labels' fields, each as a sentence.
func errorOnce(e *boclient.APIError, labels map[string]string) *boclient.APIError {
	if e == nil {
		return nil
	}
	top := *e
	top.Errors = nil
	for _, fe := range e.Errors {
		name, _, _ := strings.Cut(strings.SplitN(fe.Field, "[", 2)[0], ".")
		if _, shown := labels[name]; !shown {
			top.Errors = append(top.Errors, boclient.FieldError{Message: sentence("", fe.Message)})
		}
	}
	if len(e.Errors) > len(top.Errors) && e.Status == 422 {
		top.Detail = "Nothing was saved: the fields marked below need attention."
	}
	return &top
}

// formOf is the form of d: its pending changes when it has some (the
// version an editor works on), in the mode they are saved in.
func formOf(stored boclient.Document, etag string) form {
	d := stored.Pending()
	f := form{Mode: modeOf(stored), UnpublishAt: stored.UnpublishAt, ID: d.ID, ETag: etag, Type: d.Type, Title: d.Title, URL: d.URL, Content: d.Content,
		Sources: strings.Join(d.Sources, "\n"), TagIDs: d.TagIDs, ImageIDs: d.ImageIDs, RelatedIDs: d.RelatedIDs}
	if d.File != nil {
		f.FileID = d.File.ID
	}
	return f
}

// input is the API body for f: only its type's fields.
func (f form) input() boclient.DocumentInput {
	in := boclient.DocumentInput{Type: f.Type, Title: f.Title, TagIDs: nonNil(f.TagIDs), RelatedIDs: nonNil(f.RelatedIDs)}
	switch f.Type {
	case "LINK":
		in.URL = f.URL
	case "PDF":
		in.FileID = f.FileID
	case "MARKDOWN", "HTML":
		in.Content, in.ImageIDs = f.Content, nonNil(f.ImageIDs)
		in.Sources = lines(f.Sources)
	}
	return in
}

// lines are the non-empty lines of s, trimmed.
func lines(s string) []string {
	out := []string{}
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// choices loads what the form offers; a failure leaves the lists empty
// and is returned, the form still shows what was typed.
func (p *Pages) choices(ctx context.Context, token string, d *editData) error {
	cats, err := p.cfg.API.Categories(ctx, token)
	if err != nil {
		return err
	}
	medias, err := p.cfg.API.Medias(ctx, token)
	if err != nil {
		return err
	}
	docs, err := p.cfg.API.Documents(ctx, token)
	if err != nil {
		return err
	}
	d.Categories = cats
	for _, m := range medias {
		switch {
		case m.MimeType == "application/pdf":
			d.PDFs = append(d.PDFs, m)
		case strings.HasPrefix(m.MimeType, "image/"):
			d.Images = append(d.Images, m)
		}
	}
	for _, o := range docs {
		if !o.IsDeleted && o.ID != d.Form.ID {
			d.Others = append(d.Others, o)
		}
	}
	return nil
}

// showForm renders the edit page for d with status.
func (p *Pages) showForm(c *gin.Context, status int, d editData) {
	d.Types = Types
	title := "New " + strings.ToLower(kind(d.Form.Type))
	if d.Form.ID != "" {
		title = d.Form.Title
		if title == "" {
			title = kind(d.Form.Type)
		}
	}
	p.render(c, status, "edit", view{Title: title, Notice: done(c.Query("done")), Error: pageError(d.Err), Data: d})
}

func (p *Pages) newDocument(c *gin.Context) {
	s, _ := current(c)
	t := c.Query("type")
	if !validType(t) {
		p.render(c, http.StatusOK, "choose", view{Title: "New document", Data: Types})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	d := editData{Form: form{Type: t, Key: newKey()}}
	if err := p.choices(ctx, s.Token, &d); err != nil {
		p.fail(c, err)
		return
	}
	p.showForm(c, http.StatusOK, d)
}

func validType(t string) bool { return slices.Contains(Types, t) }

func (p *Pages) editDocument(c *gin.Context) {
	s, _ := current(c)
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	doc, etag, err := p.cfg.API.Document(ctx, s.Token, c.Param("id"))
	if err != nil {
		p.fail(c, err)
		return
	}
	d := editData{Form: formOf(doc, etag), Stored: &doc, Zone: zone(c)}
	d.Form.PublishAt = localInput(doc.PublishAt, d.Zone)
	if doc.Draft != nil {
		for _, ff := range formFields {
			if !ff.equal(d.Form, formOf(doc.Live(), "")) {
				d.Differs = append(d.Differs, ff.Label)
			}
		}
	}
	if err := p.choices(ctx, s.Token, &d); err != nil {
		p.fail(c, err)
		return
	}
	p.storedPreview(ctx, s, &d)
	p.showForm(c, http.StatusOK, d)
}

// formMemory is how much of a posted form is held in memory; the rest of
// a file goes to a temporary file. sessionlessForm caps the body of a form
// posted without a session (it comes back, typed, with the sign-in link).
const (
	formMemory      = 1 << 20
	sessionlessForm = 1 << 20
)

// parseForm reads the posted form. A body over the limit (LimitBody, or
// sessionlessForm) is a 413 saying so; nothing was sent to the API.
func parseForm(c *gin.Context) error {
	err := c.Request.ParseMultipartForm(formMemory)
	if errors.Is(err, http.ErrNotMultipart) {
		err = c.Request.ParseForm()
	}
	var big *http.MaxBytesError
	if errors.As(err, &big) {
		return &boclient.APIError{Status: http.StatusRequestEntityTooLarge, Code: "too_large", Detail: fmt.Sprintf(
			"The form is larger than the console accepts (%d MiB), so nothing was saved. Go back to get what you typed and pick a smaller file.", big.Limit>>20)}
	}
	if err != nil {
		return &boclient.APIError{Status: http.StatusBadRequest, Code: "bad_form", Detail: "The form could not be read, so nothing was saved. Go back and send it again."}
	}
	return nil
}

// typed is the form as posted. Browsers send a textarea's line ends as
// CRLF (HTML's form encoding); the API stores LF, so a text sent back
// untouched must compare equal to it (the 412 merge).
func typed(c *gin.Context) form {
	return form{Key: c.PostForm("key"), ID: c.Param("id"), ETag: c.PostForm("etag"), Type: c.PostForm("type"), Title: c.PostForm("title"),
		URL: c.PostForm("url"), FileID: c.PostForm("fileId"), Content: lf(c.PostForm("content")),
		Sources: lf(c.PostForm("sources")), TagIDs: c.PostFormArray("tag"), ImageIDs: c.PostFormArray("image"),
		RelatedIDs: c.PostFormArray("related"), Mode: c.PostForm("mode"), PublishAt: c.PostForm("publishAt"),
		UnpublishAt: c.PostForm("unpublishAt"), RelatedQuery: c.PostForm("relatedQ")}
}

func lf(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

func (p *Pages) createDocument(c *gin.Context) { p.save(c, true) }
func (p *Pages) updateDocument(c *gin.Context) { p.save(c, false) }

// save sends the typed form to the API; whatever fails, the form comes
// back with what was typed and the API's words next to the fields.
func (p *Pages) save(c *gin.Context, create bool) {
	s, ok := current(c)
	if !ok { // the form comes back, but nobody unknown makes the console read a file
		c.Request.Body = http.MaxBytesReader(c.Writer, c.Request.Body, sessionlessForm)
	}
	if err := parseForm(c); err != nil {
		p.fail(c, err) // never a call with a form that was not read: its fields would be empty
		return
	}
	f := typed(c)
	if create {
		f.ID = ""
	}
	if !ok {
		p.showForm(c, http.StatusUnauthorized, editData{Form: f, Err: sessionEnded})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	if c.PostForm("preview") != "" || c.PostForm("findRelated") != "" { // nothing saved
		p.showPreview(c, ctx, s, f)
		return
	}
	act := c.PostForm("action")
	in, bad := f.editorialInput(act, zone(c))
	if bad != nil {
		p.reshow(c, ctx, s, http.StatusUnprocessableEntity, editData{Form: f, Err: bad, Zone: zone(c)})
		return
	}
	doc, etag, err := p.send(c, ctx, s.Token, &f, in, create)
	var what string
	if err == nil {
		what, err = p.afterSave(ctx, s.Token, f, act, doc, etag, create)
	}
	if err != nil {
		e := boclient.AsAPIError(err)
		if create && !retriable(e) { // the key now holds this answer: a corrected form is another request
			f.Key = newKey()
		}
		d := editData{Form: f, Err: explain(e), Zone: zone(c)}
		if e.Status == http.StatusPreconditionFailed && !create {
			p.theirVersion(ctx, s.Token, &d)
		}
		p.reshow(c, ctx, s, status(d.Err), d)
		return
	}
	c.Redirect(http.StatusSeeOther, Base+"/documents/"+url.PathEscape(doc.ID)+"?done="+what)
}

// send uploads the picked file of a PDF, if any, then creates or updates.
// It returns the document saved and its ETag.
func (p *Pages) send(c *gin.Context, ctx context.Context, token string, f *form, in boclient.DocumentInput, create bool) (boclient.Document, string, error) {
	if fh, err := c.FormFile("upload"); err == nil && f.Type == "PDF" {
		file, err := fh.Open()
		if err != nil {
			return boclient.Document{}, "", err
		}
		defer file.Close()
		m, err := p.cfg.API.Upload(ctx, token, fh.Filename, file)
		if err != nil {
			e := boclient.AsAPIError(err)
			e.Errors = append(e.Errors, boclient.FieldError{Field: "fileId", Message: "The upload failed: " + e.Detail})
			return boclient.Document{}, "", e
		}
		f.FileID, in.FileID = m.ID, m.ID
	}
	if create {
		return p.cfg.API.CreateDocument(ctx, token, f.Key, in)
	}
	return p.cfg.API.UpdateDocument(ctx, token, f.ID, f.ETag, in)
}

// newKey returns a fresh Idempotency-Key: 128 random bits.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// retriable reports whether sending the same create again may replay its
// first outcome: the API kept no answer (5xx, unreachable) or is still
// running it (409 idempotency_key_in_use).
func retriable(e *boclient.APIError) bool {
	return e.Status == 0 || e.Status >= 500 || e.Code == "idempotency_key_in_use"
}

// explain puts the errors a person can act on in words.
func explain(e *boclient.APIError) *boclient.APIError {
	switch e.Status {
	case http.StatusPreconditionFailed:
		e.Detail = "Someone changed this document after you opened it, so nothing was saved. What you typed is kept below; open the document again to see their version."
	case http.StatusUnauthorized:
		e.Detail = sessionEnded.Detail
	case http.StatusForbidden:
		e.Detail = "You may read the library but not change it; nothing was saved."
	}
	if e.Code == "idempotency_key_reused" {
		// The form was changed after a save whose answer was lost (5xx): that
		// save may have created the document, and this one did not.
		e.Detail = "Nothing was saved now, but your earlier save of this new document may have gone through: " +
			"look for it in the documents list before saving again, as saving again makes a second document."
	}
	return e
}

// theirVersion loads the version that made a save 412 and puts its ETag in
// the form: what was typed stays, their version is shown beside it, and
// saving again replaces it knowingly (never with the stale ETag again).
// If it cannot be read, the form keeps the stale ETag and says so.
func (p *Pages) theirVersion(ctx context.Context, token string, d *editData) {
	cur, etag, err := p.cfg.API.Document(ctx, token, d.Form.ID)
	if err != nil {
		return
	}
	base := p.base(ctx, token, d.Form)
	c := merge(&d.Form, base, formOf(cur, etag))
	d.Current, d.Stored, d.Form.ETag, d.Conflict = &cur, &cur, etag, &c
	d.Form.Mode = modeOf(cur) // saving again goes where their version is
	who := cur.UpdatedBy
	if who == "" {
		who = "someone"
	}
	d.Err.Detail = fmt.Sprintf("%s changed this document at %s, after you opened it, so nothing was saved. "+
		"What you typed is kept in the form; their version is shown below it, with the fields that differ. "+
		"Saving again replaces their version with the form as it is now.", who, exact(cur.UpdatedAt, d.Zone))
}
