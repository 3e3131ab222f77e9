// Package upstream asks the services that own tags and media whether the
// ids a document references exist. It asks them over their internal HTTP
// lookups at write time instead of keeping a local copy fed by events: a
// copy would lag behind a tag or media created a moment ago, and several
// catalog replicas would each need their own. A slow or down service is an
// *document.UnavailableError within Timeout, never a wrong answer.
package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/doclib/libs/lookup"
	"github.com/doclib/services/catalog/internal/document"
)

// Timeout bounds one lookup.
const Timeout = 5 * time.Second

// Client implements document.References.
type Client struct {
	taxonomy, media *url.URL
	http            *http.Client
}

var _ document.References = (*Client)(nil)

// New returns a client of the taxonomy and media services at those base URLs.
func New(taxonomy, media *url.URL) *Client {
	return &Client{taxonomy: taxonomy, media: media, http: &http.Client{
		Timeout:   Timeout,
		Transport: otelhttp.NewTransport(http.DefaultTransport),
	}}
}

type tagDTO struct {
	ID        string `json:"id"`
	CreatedAt string `json:"createdAt"`
}

type mediaDTO struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	MimeType string `json:"mimeType"`
	Deleting bool   `json:"deleting"`
}

// Tags implements document.References.
func (c *Client) Tags(ctx context.Context, ids []string) (map[string]time.Time, error) {
	tags, err := ask[tagDTO](ctx, c, "taxonomy service", c.taxonomy, "/internal/tags", ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(tags))
	for _, t := range tags {
		var at time.Time
		if t.CreatedAt != "" { // a taxonomy older than this catalog does not say
			if at, err = time.Parse(time.RFC3339Nano, t.CreatedAt); err != nil {
				return nil, &document.UnavailableError{Service: "taxonomy service", Err: fmt.Errorf("tag %s createdAt: %w", t.ID, err)}
			}
		}
		out[t.ID] = at
	}
	return out, nil
}

// Medias implements document.References.
func (c *Client) Medias(ctx context.Context, ids []string) (map[string]document.Media, error) {
	medias, err := ask[mediaDTO](ctx, c, "media service", c.media, "/internal/medias", ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]document.Media, len(medias))
	for _, m := range medias {
		out[m.ID] = document.Media{ID: m.ID, Name: m.Name, MimeType: m.MimeType, Deleting: m.Deleting}
	}
	return out, nil
}

// maxCategories bounds the tag categories' body (every category with its
// tags: some hundreds of KiB at most).
const maxCategories = 16 << 20

// Categories gives the tag categories as the public API shows them (GET
// /public/tags-categories of taxonomy), revalidated with etag: changed is
// false when taxonomy answers 304.
func (c *Client) Categories(ctx context.Context, etag string) (body []byte, newETag string, changed bool, err error) {
	const service = "taxonomy service"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.taxonomy.JoinPath("/public/tags-categories").String(), nil)
	if err != nil {
		return nil, "", false, err
	}
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, "", false, &document.UnavailableError{Service: service, Err: err}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return nil, etag, false, nil
	case http.StatusOK:
	default:
		return nil, "", false, &document.UnavailableError{Service: service, Err: fmt.Errorf("tag categories answered %s", resp.Status)}
	}
	body, err = io.ReadAll(io.LimitReader(resp.Body, maxCategories))
	if err != nil {
		return nil, "", false, &document.UnavailableError{Service: service, Err: fmt.Errorf("tag categories: %w", err)}
	}
	return body, resp.Header.Get("ETag"), true, nil
}

// ask asks service which of ids exist, lookup.MaxIDs ids at a time (a
// category may have more tags than one lookup may ask about). Only
// a failure to get an answer is an *UnavailableError; a refusal (4xx) is a
// bug of this client and an ordinary error.
func ask[T any](ctx context.Context, c *Client, service string, base *url.URL, path string, ids []string) ([]T, error) {
	var asked []string
	for _, id := range ids {
		if !strings.Contains(id, ",") && !slices.Contains(asked, id) { // an id with a comma cannot exist
			asked = append(asked, id)
		}
	}
	var out []T
	for chunk := range slices.Chunk(asked, lookup.MaxIDs) {
		var part []T
		if err := c.get(ctx, service, base, path, chunk, &part); err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

func (c *Client) get(ctx context.Context, service string, base *url.URL, path string, ids []string, out any) error {
	u := base.JoinPath(path)
	u.RawQuery = lookup.Query(ids)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &document.UnavailableError{Service: service, Err: err}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		return fmt.Errorf("%s refused the lookup: %s", service, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return &document.UnavailableError{Service: service, Err: fmt.Errorf("lookup answered %s", resp.Status)}
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return &document.UnavailableError{Service: service, Err: fmt.Errorf("lookup answer: %w", err)}
	}
	return nil
}
