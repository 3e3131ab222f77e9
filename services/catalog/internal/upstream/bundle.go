package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/library"
)

var _ library.BundleSource = (*Client)(nil)

// maxConfig bounds the public settings' body (a few hundred bytes).
const maxConfig = 1 << 20

// PublicConfig implements library.BundleSource: the taxonomy's GET
// /public/config, as it answers it.
func (c *Client) PublicConfig(ctx context.Context) (json.RawMessage, error) {
	const service = "taxonomy service"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.taxonomy.JoinPath("/public/config").String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &document.UnavailableError{Service: service, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &document.UnavailableError{Service: service, Err: fmt.Errorf("public settings answered %s", resp.Status)}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxConfig))
	if err == nil && !json.Valid(body) {
		err = fmt.Errorf("the public settings are not JSON")
	}
	if err != nil {
		return nil, &document.UnavailableError{Service: service, Err: err}
	}
	return body, nil
}

// Files implements library.BundleSource with the media service's internal
// lookup, which answers the public record (FileMedia) of each media found.
func (c *Client) Files(ctx context.Context, ids []string) ([]library.File, error) {
	records, err := ask[json.RawMessage](ctx, c, "media service", c.media, "/internal/medias", ids)
	if err != nil {
		return nil, err
	}
	out := make([]library.File, 0, len(records))
	for _, r := range records {
		var m struct {
			ID       string `json:"id"`
			Size     int64  `json:"size"`
			Deleting bool   `json:"deleting"`
		}
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, &document.UnavailableError{Service: "media service", Err: fmt.Errorf("lookup answer: %w", err)}
		}
		if m.Deleting {
			continue
		}
		out = append(out, library.File{ID: m.ID, Size: m.Size, Record: r})
	}
	return out, nil
}
