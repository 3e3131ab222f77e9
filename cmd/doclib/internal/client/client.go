// Package client talks to a doclib installation's back-office API through
// its gateway (the admin listener), with a bearer token: doclib reads and
// writes through the services' own routes, never their databases, so every
// rule stays in the service that owns it.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/doclib/cmd/doclib/internal/archive"
)

// ErrNotFound is a 404: the record does not exist (any more).
var ErrNotFound = errors.New("not found")

// Client calls one installation.
type Client struct {
	base  string
	token string
	http  *http.Client
	// Attempts bounds the tries of a request answered 502, 503 or 504, or
	// that failed on the network (every route doclib calls is idempotent).
	Attempts int
	// Wait is the first pause between tries; it doubles, up to 5 s.
	Wait time.Duration
}

// New returns a client of the gateway's admin listener at base.
func New(base, token string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), token: token, Attempts: 8, Wait: 250 * time.Millisecond,
		// No overall timeout: a media download may take long. Idle
		// connections are kept for every worker (the default keeps 2).
		http: &http.Client{Timeout: 0, Transport: transport()}}
}

func transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	return t
}

// StatusError is an answer doclib did not expect.
type StatusError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.Status, e.Body)
}

// Body is what a request sends; Open is called again for every try.
type Body struct {
	ContentType string
	Open        func() (io.Reader, error)
	Headers     map[string]string
	// Once: a streamed body that cannot be sent again; not retried.
	Once bool
}

// JSON is a Body holding raw JSON.
func JSON(raw []byte) *Body {
	return &Body{ContentType: "application/json", Open: func() (io.Reader, error) { return bytes.NewReader(raw), nil }}
}

// Do sends the request and returns the answer of status 2xx, whose body the
// caller closes. 404 is ErrNotFound; another status a *StatusError.
func (c *Client) Do(ctx context.Context, method, path string, body *Body) (*http.Response, error) {
	wait := c.Wait
	var last error
	for try := 1; ; try++ {
		resp, err := c.once(ctx, method, path, body)
		if err == nil {
			return resp, nil
		}
		last = err
		var se *StatusError
		retry := !errors.As(err, &se) || se.Status == 502 || se.Status == 503 || se.Status == 504
		once := body != nil && body.Once
		if errors.Is(err, ErrNotFound) || !retry || once || try >= c.Attempts || ctx.Err() != nil {
			return nil, last
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

func (c *Client) once(ctx context.Context, method, path string, body *Body) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		var err error
		if rd, err = body.Open(); err != nil {
			return nil, err
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	// Bytes as stored: a download's Content-Length is then its size.
	req.Header.Set("Accept-Encoding", "identity")
	if body != nil {
		req.Header.Set("Content-Type", body.ContentType)
		for k, v := range body.Headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s %s: %w", method, path, ErrNotFound)
	}
	return nil, &StatusError{Method: method, Path: path, Status: resp.StatusCode, Body: strings.TrimSpace(string(raw))}
}

// Get returns the body of a GET answered 2xx.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	resp, err := c.Do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxBody)+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	if len(raw) > maxBody {
		return nil, fmt.Errorf("GET %s: the answer is over %d bytes, more than an archive entry may hold", path, maxBody)
	}
	return raw, nil
}

// maxBody is the most Get reads: an answer past what an archive entry may
// hold could not be written anyway, and is not held in memory whole.
var maxBody = archive.MaxJSONEntry

// Download opens a GET's body as a stream with its announced length.
func (c *Client) Download(ctx context.Context, path string) (io.ReadCloser, int64, error) {
	resp, err := c.Do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, 0, err
	}
	n, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		resp.Body.Close()
		return nil, 0, fmt.Errorf("GET %s: no Content-Length", path)
	}
	return resp.Body, n, nil
}
