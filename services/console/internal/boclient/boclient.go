// Package boclient is the console's client of the gateway's documented
// back-office API (/bo, api/openapi.yaml), called with the signed-in
// person's bearer token. It holds the JSON shapes the console reads and
// turns every non-2xx answer into an *APIError carrying the problem.
package boclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client calls one gateway's admin listener.
type Client struct {
	base *url.URL
	http *http.Client
	// rejected, when set, is told each token the API answered 401.
	rejected func(token string)
}

// OnRejected has f told every token the API refuses (401): the session
// that sends it has ended, whichever page found out.
func (c *Client) OnRejected(f func(token string)) { c.rejected = f }

// New returns a client of the admin listener at base (scheme and host).
// Redirects are not followed: one would carry the person's token to
// another path and repeat a write.
func New(base *url.URL, timeout time.Duration) *Client {
	return &Client{base: base, http: &http.Client{Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// FieldError is one entry of a problem's errors.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// APIError is an answer other than 2xx: the problem document the API
// sent, or one made up when the API could not be reached (Status 0).
type APIError struct {
	Status int          `json:"status"`
	Code   string       `json:"code"`
	Detail string       `json:"detail"`
	Errors []FieldError `json:"errors"`
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Detail) }

// Field returns the API's messages about field or its items
// ("tagsIds[1]"), if any.
func (e *APIError) Field(field string) string {
	var msgs []string
	for _, f := range e.Errors {
		if f.Field == field || strings.HasPrefix(f.Field, field+"[") || strings.HasPrefix(f.Field, field+".") {
			msgs = append(msgs, f.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

// Unreachable is the error of a call that got no answer.
func unreachable(err error) *APIError {
	return &APIError{Code: "unreachable", Detail: "The library's API cannot be reached right now, so nothing was changed. Try again in a moment."}
}

// AsAPIError returns err as an *APIError (an unexpected error becomes one
// that says the API misbehaved).
func AsAPIError(err error) *APIError {
	var e *APIError
	if errors.As(err, &e) {
		return e
	}
	return &APIError{Code: "bad_answer", Detail: "the library's API gave an answer the console does not understand"}
}

// request is one call.
type request struct {
	method, path string
	query        url.Values
	token        string
	body         io.Reader
	contentType  string
	ifMatch      string
	ifNoneMatch  string
	// key is the Idempotency-Key of a create: a form posted twice makes
	// one document.
	key string
}

// do sends r and decodes a 2xx JSON answer into out (when not nil); it
// returns the answer's ETag.
func (c *Client) do(ctx context.Context, r request, out any) (string, error) {
	_, etag, err := c.send(ctx, r, out)
	return etag, err
}

// send is do that also returns the answer's 2xx status.
func (c *Client) send(ctx context.Context, r request, out any) (int, string, error) {
	res, err := c.open(ctx, r)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	if out == nil || res.StatusCode == http.StatusNoContent {
		return res.StatusCode, res.Header.Get("ETag"), nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return 0, "", AsAPIError(err)
	}
	return res.StatusCode, res.Header.Get("ETag"), nil
}

// open sends r and returns a 2xx answer with its body still to read.
func (c *Client) open(ctx context.Context, r request) (*http.Response, error) {
	// An id of "." or ".." would make JoinPath call another route than the
	// documented one it names (/bo/documents/.. is /bo): no such id exists.
	for _, seg := range strings.Split(r.path, "/") {
		if seg == "." || seg == ".." {
			return nil, &APIError{Status: http.StatusNotFound, Code: "not_found", Detail: "no such id"}
		}
	}
	u := c.base.JoinPath(r.path)
	u.RawQuery = r.query.Encode()
	req, err := http.NewRequestWithContext(ctx, r.method, u.String(), r.body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	req.Header.Set("Accept", "application/json")
	if r.contentType != "" {
		req.Header.Set("Content-Type", r.contentType)
	}
	if r.ifMatch != "" {
		req.Header.Set("If-Match", r.ifMatch)
	}
	if r.ifNoneMatch != "" {
		req.Header.Set("If-None-Match", r.ifNoneMatch)
	}
	if r.key != "" {
		req.Header.Set("Idempotency-Key", r.key)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, unreachable(err)
	}
	if res.StatusCode == http.StatusUnauthorized && c.rejected != nil {
		c.rejected(r.token)
	}
	if res.StatusCode/100 != 2 {
		defer res.Body.Close()
		return nil, readProblem(res)
	}
	return res, nil
}

func readProblem(res *http.Response) *APIError {
	e := &APIError{}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if json.Unmarshal(body, e) != nil || e.Detail == "" {
		e.Detail = http.StatusText(res.StatusCode)
	}
	e.Status = res.StatusCode
	return e
}

// jsonRequest is a request with v as its JSON body.
// jsonRequest encodes v without HTML escaping: json.Marshal writes each
// <, > and & of a text as \u003c (6 bytes), so HTML well under the 1 MiB
// content limit could pass the gateway's JSON body limit (a 413 where the
// API documents a 422).
func jsonRequest(method, path, token string, v any) request {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the console's own types always encode
	return request{method: method, path: path, token: token, body: bytes.NewReader(b.Bytes()), contentType: "application/json"}
}

// Me is who a token names, as the gateway decides it (GET /bo/me).
type Me struct {
	Name string `json:"name"`
	Role string `json:"role"` // "viewer" or "editor"
}

// Me asks the gateway who token names and what it may do: 401 is a token
// that is not valid, 403 one naming somebody with no role on /bo.
func (c *Client) Me(ctx context.Context, token string) (Me, error) {
	var me Me
	if _, err := c.do(ctx, request{method: http.MethodGet, path: "/bo/me", token: token}, &me); err != nil {
		return Me{}, err
	}
	if me.Role != "viewer" && me.Role != "editor" {
		return Me{}, &APIError{Code: "bad_answer", Detail: "the API named a role the console does not know"}
	}
	return me, nil
}

// upload is a multipart body with one file part.
func upload(name string, data io.Reader) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", name)
		if err == nil {
			_, err = io.Copy(part, data)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}

// getIfChanged reads path into out unless its answer still has ETag etag
// (a 304: changed is false and out is left as it is). The API checks the
// token either way.
func (c *Client) getIfChanged(ctx context.Context, token, path, etag string, out any) (newETag string, changed bool, err error) {
	newETag, err = c.do(ctx, request{method: http.MethodGet, path: path, token: token, ifNoneMatch: etag}, out)
	var e *APIError
	if errors.As(err, &e) && e.Status == http.StatusNotModified && etag != "" {
		return etag, false, nil
	}
	return newETag, err == nil, err
}
