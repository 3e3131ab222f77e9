package boclient

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// DocumentShort is an entry of the back-office listing.
type DocumentShort struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Type      string   `json:"type"`
	Status    string   `json:"status"`
	TagIDs    []string `json:"tagsIds"`
	IsDeleted bool     `json:"isDeleted"`
	UpdatedAt string   `json:"updatedAt"`
	UpdatedBy string   `json:"updatedBy"`
	DeletedAt string   `json:"deletedAt"`
	DeletedBy string   `json:"deletedBy"`
	// PendingChanges and PublishAt: nil when the listing does not carry
	// them (it does not today); the console then reads them from the
	// document's detail (pages/states.go).
	PendingChanges *bool   `json:"pendingChanges"`
	PublishAt      *string `json:"publishAt"`
}

// FileRef is a PDF document's file.
type FileRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Document is a document in detail, as the back-office reads it.
type Document struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Type       string   `json:"type"`
	URL        string   `json:"url"`
	TagIDs     []string `json:"tagsIds"`
	Content    string   `json:"content"`
	Sources    []string `json:"sources"`
	ImageIDs   []string `json:"imagesIds"`
	File       *FileRef `json:"file"`
	RelatedIDs []string `json:"relatedIds"`
	IsDeleted  bool     `json:"isDeleted"`
	CreatedAt  string   `json:"createdAt"`
	CreatedBy  string   `json:"createdBy"`
	UpdatedAt  string   `json:"updatedAt"`
	UpdatedBy  string   `json:"updatedBy"`
	DeletedAt  string   `json:"deletedAt"`
	// The editorial fields: Status is published or draft; Draft is a
	// published document's pending changes (nil: none); PublishAt and
	// UnpublishAt the schedule ("" none).
	Status      string    `json:"status"`
	Version     int64     `json:"version"`
	PublishedAt string    `json:"publishedAt"`
	PublishAt   string    `json:"publishAt"`
	UnpublishAt string    `json:"unpublishAt"`
	Draft       *Document `json:"draft"`
}

// Pending is the document with its pending changes in place of its live
// content fields (the version an editor works on); d itself when none.
func (d Document) Pending() Document {
	if d.Draft == nil {
		return d
	}
	p := d
	x := *d.Draft
	p.Title, p.URL, p.TagIDs, p.Content, p.Sources = x.Title, x.URL, x.TagIDs, x.Content, x.Sources
	p.ImageIDs, p.File, p.RelatedIDs = x.ImageIDs, x.File, x.RelatedIDs
	return p
}

// Live is the document with its live content only (no pending changes).
func (d Document) Live() Document {
	d.Draft = nil
	return d
}

// DocumentInput is the body of a create or a full update (DocumentCreate,
// DocumentUpdate): fields of other types are left out.
type DocumentInput struct {
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	TagIDs     []string `json:"tagsIds"`
	URL        string   `json:"url,omitempty"`
	FileID     string   `json:"fileId,omitempty"`
	Content    string   `json:"content,omitempty"`
	Sources    []string `json:"sources,omitempty"`
	ImageIDs   []string `json:"imagesIds,omitempty"`
	RelatedIDs []string `json:"relatedIds"`
	// Status is "draft" to create a draft ("" publishes at once).
	Status string `json:"status,omitempty"`
	// Draft keeps the body as pending changes of a published document.
	Draft bool `json:"draft,omitempty"`
	// PublishAt and UnpublishAt are the schedule (RFC 3339, UTC); a PATCH
	// without them clears it.
	PublishAt   string `json:"publishAt,omitempty"`
	UnpublishAt string `json:"unpublishAt,omitempty"`
}

// Tag is a tag of a category.
type Tag struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	CategoryID string `json:"categoryId"`
}

// Category is a tag category with its tags.
type Category struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Tags []Tag  `json:"tags"`
}

// Media is a media record.
type Media struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MimeType  string `json:"mimeType"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	CreatedAt string `json:"createdAt"`
	CreatedBy string `json:"createdBy"`
}

// Documents is every document, deleted ones included.
func (c *Client) Documents(ctx context.Context, token string) ([]DocumentShort, error) {
	var out []DocumentShort
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/documents", token: token}, &out)
	return out, err
}

// DocumentsIfChanged is Documents unless the listing still has ETag etag
// (changed false, docs nil).
func (c *Client) DocumentsIfChanged(ctx context.Context, token, etag string) (docs []DocumentShort, newETag string, changed bool, err error) {
	newETag, changed, err = c.getIfChanged(ctx, token, "/bo/documents", etag, &docs)
	return docs, newETag, changed, err
}

// CategoriesIfChanged is Categories unless they still have ETag etag
// (changed false, cats nil).
func (c *Client) CategoriesIfChanged(ctx context.Context, token, etag string) (cats []Category, newETag string, changed bool, err error) {
	newETag, changed, err = c.getIfChanged(ctx, token, "/bo/tags-categories", etag, &cats)
	return cats, newETag, changed, err
}

// Document is one document and its version tag (for If-Match).
func (c *Client) Document(ctx context.Context, token, id string) (Document, string, error) {
	var out Document
	etag, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/documents/" + url.PathEscape(id) + "/detail", token: token}, &out)
	return out, etag, err
}

// CreateDocument stores a new document.
// key, when not empty, is sent as the Idempotency-Key.
// It returns the document and its ETag.
func (c *Client) CreateDocument(ctx context.Context, token, key string, in DocumentInput) (Document, string, error) {
	var out Document
	r := jsonRequest(http.MethodPost, "/bo/documents", token, in)
	r.key = key
	etag, err := c.do(ctx, r, &out)
	return out, etag, err
}

// UpdateDocument replaces a document's fields if it is still at version
// etag (412 otherwise); it returns the document and its new ETag.
func (c *Client) UpdateDocument(ctx context.Context, token, id, etag string, in DocumentInput) (Document, string, error) {
	var out Document
	r := jsonRequest(http.MethodPatch, "/bo/documents/"+url.PathEscape(id), token, in)
	r.ifMatch = etag
	newETag, err := c.do(ctx, r, &out)
	return out, newETag, err
}

// PublishDocument makes a draft, or a document's pending changes, public
// if the document is still at version etag.
func (c *Client) PublishDocument(ctx context.Context, token, id, etag string) (Document, error) {
	return c.editorial(ctx, token, id, "/publish", http.MethodPost, etag)
}

// UnpublishDocument takes a published document back to draft.
func (c *Client) UnpublishDocument(ctx context.Context, token, id, etag string) (Document, error) {
	return c.editorial(ctx, token, id, "/unpublish", http.MethodPost, etag)
}

// DiscardDraft drops a published document's pending changes.
func (c *Client) DiscardDraft(ctx context.Context, token, id, etag string) (Document, error) {
	return c.editorial(ctx, token, id, "/draft", http.MethodDelete, etag)
}

func (c *Client) editorial(ctx context.Context, token, id, what, method, etag string) (Document, error) {
	var out Document
	_, err := c.do(ctx, request{method: method, path: "/bo/documents/" + url.PathEscape(id) + what, token: token, ifMatch: etag}, &out)
	return out, err
}

// DeleteDocument marks a document deleted.
func (c *Client) DeleteDocument(ctx context.Context, token, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/bo/documents/" + url.PathEscape(id), token: token}, nil)
	return err
}

// RestoreDocument brings a deleted document back.
func (c *Client) RestoreDocument(ctx context.Context, token, id string) error {
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/bo/documents/" + url.PathEscape(id) + "/restore", token: token}, nil)
	return err
}

// Categories is every tag category with its tags.
func (c *Client) Categories(ctx context.Context, token string) ([]Category, error) {
	var out []Category
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/tags-categories", token: token}, &out)
	return out, err
}

// CreateCategory adds a category.
func (c *Client) CreateCategory(ctx context.Context, token, id, name string) error {
	_, err := c.do(ctx, jsonRequest(http.MethodPost, "/bo/tags-categories", token, map[string]string{"id": id, "name": name}), nil)
	return err
}

// CreateTag adds a tag to a category.
func (c *Client) CreateTag(ctx context.Context, token, id, name, category string) error {
	body := map[string]string{"id": id, "name": name, "categoryId": category}
	_, err := c.do(ctx, jsonRequest(http.MethodPost, "/bo/tags", token, body), nil)
	return err
}

// Medias is every media record.
func (c *Client) Medias(ctx context.Context, token string) ([]Media, error) {
	var out []Media
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/medias", token: token}, &out)
	return out, err
}

// Upload stores a file as a media record.
func (c *Client) Upload(ctx context.Context, token, name string, data io.Reader) (Media, error) {
	m, _, err := c.UploadMedia(ctx, token, name, data)
	return m, err
}

// UploadMedia stores a file as a media record; existed is true when the
// same bytes were stored already and the answer is that media (200).
func (c *Client) UploadMedia(ctx context.Context, token, name string, data io.Reader) (m Media, existed bool, err error) {
	body, ct := upload(name, data)
	st, _, err := c.send(ctx, request{method: http.MethodPost, path: "/bo/medias", token: token, body: body, contentType: ct}, &m)
	return m, st == http.StatusOK, err
}

// DeleteMedia deletes a media (409 media_in_use while a document uses it).
func (c *Client) DeleteMedia(ctx context.Context, token, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/bo/medias/" + url.PathEscape(id), token: token}, nil)
	return err
}

// DownloadMedia opens a media's bytes; the caller closes the body.
func (c *Client) DownloadMedia(ctx context.Context, token, id string) (*http.Response, error) {
	return c.open(ctx, request{method: http.MethodGet, path: "/bo/medias/" + url.PathEscape(id) + "/download", token: token})
}

// Config is the public settings as the back-office reads them.
type Config struct {
	ModeratorEmail string `json:"moderatorEmail"`
	UpdatedAt      string `json:"updatedAt"`
	UpdatedBy      string `json:"updatedBy"`
}

// Config reads the public settings.
func (c *Client) Config(ctx context.Context, token string) (Config, error) {
	var out Config
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/config", token: token}, &out)
	return out, err
}

// SetConfig sets the moderator's e-mail address.
func (c *Client) SetConfig(ctx context.Context, token, email string) (Config, error) {
	var out Config
	_, err := c.do(ctx, jsonRequest(http.MethodPut, "/bo/config", token, map[string]string{"moderatorEmail": email}), &out)
	return out, err
}

// RenameCategory changes a category's name.
func (c *Client) RenameCategory(ctx context.Context, token, id, name string) error {
	_, err := c.do(ctx, jsonRequest(http.MethodPatch, "/bo/tags-categories/"+url.PathEscape(id), token, map[string]string{"name": name}), nil)
	return err
}

// DeleteCategory deletes a category and every tag in it.
func (c *Client) DeleteCategory(ctx context.Context, token, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/bo/tags-categories/" + url.PathEscape(id), token: token}, nil)
	return err
}

// RenameTag changes a tag's name.
func (c *Client) RenameTag(ctx context.Context, token, id, name string) error {
	_, err := c.do(ctx, jsonRequest(http.MethodPatch, "/bo/tags/"+url.PathEscape(id), token, map[string]string{"name": name}), nil)
	return err
}

// DeleteTag deletes a tag; documents lose it.
func (c *Client) DeleteTag(ctx context.Context, token, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/bo/tags/" + url.PathEscape(id), token: token}, nil)
	return err
}

// Preview is an unsaved text as the API would store and show it.
type Preview struct {
	Type    string `json:"type"`
	Content string `json:"content"`
	HTML    string `json:"html"`
}

// PreviewDocument renders an unsaved MARKDOWN or HTML text with the
// sanitiser the stored documents get (POST /bo/documents/preview); nothing
// is stored.
func (c *Client) PreviewDocument(ctx context.Context, token, typ, content string) (Preview, error) {
	var out Preview
	_, err := c.do(ctx, jsonRequest(http.MethodPost, "/bo/documents/preview", token, map[string]string{"type": typ, "content": content}), &out)
	return out, err
}

// RevisionShort is one write of a document: its version, when, who
// (empty for the library's own change) and why (route or event).
type RevisionShort struct {
	Version int64  `json:"version"`
	At      string `json:"at"`
	By      string `json:"by"`
	Why     string `json:"why"`
}

// Revision is a document as it was after one write; Raw is its JSON, to
// compare with another revision.
type Revision struct {
	RevisionShort
	Raw      json.RawMessage `json:"document"`
	Document Document        `json:"-"`
}

// RevisionsFull is a page of limit revisions of document id, each with
// its document (?full=true), before the version before (0: the newest):
// one request where one per revision would do.
func (c *Client) RevisionsFull(ctx context.Context, token, id string, before int64, limit int) ([]Revision, error) {
	q := url.Values{"limit": {strconv.Itoa(limit)}, "full": {"true"}}
	if before > 0 {
		q.Set("before", strconv.FormatInt(before, 10))
	}
	var out struct {
		Revisions []Revision `json:"revisions"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/documents/" + url.PathEscape(id) + "/revisions", query: q, token: token}, &out)
	return out.Revisions, err
}

// Revision is revision rev of document id.
func (c *Client) Revision(ctx context.Context, token, id string, rev int64) (Revision, error) {
	var out Revision
	_, err := c.do(ctx, request{method: http.MethodGet, path: revisionPath(id, rev), token: token}, &out)
	if err == nil {
		err = json.Unmarshal(out.Raw, &out.Document)
	}
	return out, err
}

// Dropped are the references of a restored revision that no longer held.
type Dropped struct {
	TagIDs     []string `json:"tagsIds"`
	MediaIDs   []string `json:"mediaIds"`
	RelatedIDs []string `json:"relatedIds"`
}

// Any reports whether anything was left out.
func (d Dropped) Any() bool { return len(d.TagIDs)+len(d.MediaIDs)+len(d.RelatedIDs) > 0 }

// RestoreRevision writes revision rev's content as document id's current
// content (a new revision) if the document is still at version etag (412
// otherwise), and says what it left out.
func (c *Client) RestoreRevision(ctx context.Context, token, id string, rev int64, etag string) (Dropped, error) {
	var out struct {
		Dropped Dropped `json:"dropped"`
	}
	_, err := c.do(ctx, request{method: http.MethodPost, path: revisionPath(id, rev) + "/restore", token: token, ifMatch: etag}, &out)
	return out.Dropped, err
}

func revisionPath(id string, rev int64) string {
	return "/bo/documents/" + url.PathEscape(id) + "/revisions/" + strconv.FormatInt(rev, 10)
}
