// Package usage asks the catalog service whether live documents use a media
// (GET {CATALOG_URL}/internal/media-usage/:id), within a bounded time.
package usage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/doclib/services/media/internal/media"
)

// Timeout bounds one question to the catalog.
const Timeout = 5 * time.Second

// maxBody bounds the catalog's answer (a list of document ids).
const maxBody = 4 << 20

// Client implements media.UsageChecker over HTTP.
type Client struct {
	base *url.URL
	http *http.Client
}

var _ media.UsageChecker = (*Client)(nil)

// New returns a Client for the catalog at base.
func New(base *url.URL) *Client {
	return &Client{base: base, http: &http.Client{Timeout: Timeout}}
}

type answer struct {
	InUse       *bool    `json:"inUse"`
	DocumentIDs []string `json:"documentIds"`
}

// Usage implements media.UsageChecker. Any answer but a well-formed 200 is
// an error: the caller must not delete on a guess.
func (c *Client) Usage(ctx context.Context, id string) (media.Usage, error) {
	u := strings.TrimRight(c.base.String(), "/") + "/internal/media-usage/" + url.PathEscape(id)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return media.Usage{}, err
	}
	req.Header.Set("Accept", "application/json")
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := c.http.Do(req)
	if err != nil {
		return media.Usage{}, fmt.Errorf("catalog media usage: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return media.Usage{}, fmt.Errorf("catalog media usage: status %d", resp.StatusCode)
	}
	var a answer
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&a); err != nil {
		return media.Usage{}, fmt.Errorf("catalog media usage: %w", err)
	}
	if a.InUse == nil {
		return media.Usage{}, errors.New("catalog media usage: answer without inUse")
	}
	if a.DocumentIDs == nil {
		a.DocumentIDs = []string{}
	}
	return media.Usage{InUse: *a.InUse, DocumentIDs: a.DocumentIDs}, nil
}
