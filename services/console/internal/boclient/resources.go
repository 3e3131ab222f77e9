package boclient

import (
	"context"
	"io"
	"net/http"
	"net/url"
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
	ID       string `json:"id"`
	Name     string `json:"name"`
	MimeType string `json:"mimeType"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// Documents is every document, deleted ones included.
func (c *Client) Documents(ctx context.Context, token string) ([]DocumentShort, error) {
	var out []DocumentShort
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/documents", token: token}, &out)
	return out, err
}

// Document is one document and its version tag (for If-Match).
func (c *Client) Document(ctx context.Context, token, id string) (Document, string, error) {
	var out Document
	etag, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/documents/" + url.PathEscape(id) + "/detail", token: token}, &out)
	return out, etag, err
}

// CreateDocument stores a new document.
func (c *Client) CreateDocument(ctx context.Context, token string, in DocumentInput) (Document, error) {
	var out Document
	_, err := c.do(ctx, jsonRequest(http.MethodPost, "/bo/documents", token, in), &out)
	return out, err
}

// UpdateDocument replaces a document's fields if it is still at version
// etag (412 otherwise).
func (c *Client) UpdateDocument(ctx context.Context, token, id, etag string, in DocumentInput) (Document, error) {
	var out Document
	r := jsonRequest(http.MethodPatch, "/bo/documents/"+url.PathEscape(id), token, in)
	r.ifMatch = etag
	_, err := c.do(ctx, r, &out)
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
	body, ct := upload(name, data)
	var out Media
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/bo/medias", token: token, body: body, contentType: ct}, &out)
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
