package e2e

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/doclib/api"
)

// Contract validates real answers against the OpenAPI document the gateway
// serves (api/openapi.yaml, embedded through github.com/doclib/api), with
// github.com/pb33f/libopenapi-validator, and counts which status each
// operation was seen answering, so a test can require every operation to
// have been seen succeeding and failing.
//
// Every Stack has one (Stack.Check): every answer its Req, BO and Must get,
// in every e2e test, is validated (compressed bodies decoded first; a path
// or method the document lacks may only be the gateway's 404 or 405
// problem). To cover a new route: add it to the document, then add calls
// to TestOpenAPIConformance (a success and an error); the coverage check
// names what is missing.
type Contract struct {
	v     validator.Validator
	model *v3.Document

	mu   sync.Mutex
	seen map[string]map[int]int // "GET /public/documents/{id}/detail" -> status -> count
}

// NewContract loads the document. Each Contract has a model of its own,
// and validates one answer at a time: libopenapi renders schemas in place
// while validating, so a model shared by concurrent validations races.
func NewContract(t testing.TB) *Contract {
	t.Helper()
	doc, err := libopenapi.NewDocument(api.YAML())
	if err != nil {
		t.Fatalf("load api/openapi.yaml: %v", err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("load api/openapi.yaml: %v", err)
	}
	return &Contract{v: validator.NewValidatorFromV3Model(&m.Model), model: &m.Model, seen: map[string]map[int]int{}}
}

// Check validates one answer to req and records it. It reports every way
// the answer differs from the document.
func (c *Contract) Check(t testing.TB, req *http.Request, r Response) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	item, _, template := paths.FindPath(req, c.model, nil)
	if template == "" || !hasOperation(item, req.Method) {
		// A path or method the document does not have: the gateway's 404
		// or 405, a problem document, is all that may answer it.
		if (r.Status != http.StatusNotFound && r.Status != http.StatusMethodNotAllowed) ||
			r.Header.Get("Content-Type") != "application/problem+json" && req.Method != http.MethodHead {
			t.Errorf("%s %s answered %d %q, but the document has no such operation", req.Method, req.URL.Path, r.Status, r.Header.Get("Content-Type"))
		}
		return
	}
	key := req.Method + " " + template
	if c.seen[key] == nil {
		c.seen[key] = map[int]int{}
	}
	c.seen[key][r.Status]++

	body, err := decode(r.Header.Get("Content-Encoding"), r.Body)
	if err != nil {
		t.Errorf("%s %s answered %d with a body that is not %s: %v", req.Method, req.URL.RequestURI(), r.Status, r.Header.Get("Content-Encoding"), err)
		return
	}
	res := &http.Response{
		StatusCode: r.Status, Header: r.Header, Request: req,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
	if ok, errs := c.v.ValidateHttpResponse(req, res); !ok {
		var b strings.Builder
		for _, e := range errs {
			fmt.Fprintf(&b, "\n\t%s", e.Message)
			if e.Reason != "" && e.Reason != e.Message {
				fmt.Fprintf(&b, ": %s", e.Reason)
			}
			for _, s := range e.SchemaValidationErrors {
				fmt.Fprintf(&b, "\n\t\t%s at %s (schema %s)", s.Reason, s.FieldPath, s.KeywordLocation)
			}
		}
		if len(body) > 300 {
			body = append(body[:300:300], "..."...)
		}
		t.Errorf("%s %s answered %d, which the document does not allow:%s\n\tbody: %s", req.Method, req.URL.RequestURI(), r.Status, b.String(), body)
	}
}

// Operations lists every operation of the document as "METHOD /path".
func (c *Contract) Operations() []string {
	var out []string
	for path, item := range c.model.Paths.PathItems.FromOldest() {
		for method := range item.GetOperations().FromOldest() {
			out = append(out, strings.ToUpper(method)+" "+path)
		}
	}
	sort.Strings(out)
	return out
}

// RequireCoverage fails t for every operation not seen both succeeding
// (2xx or 304) and failing (4xx or 5xx), unless except says why it cannot.
func (c *Contract) RequireCoverage(t testing.TB, except map[string]string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []string
	for _, op := range c.Operations() {
		var ok, failed bool
		for status := range c.seen[op] {
			ok = ok || (status >= 200 && status < 300) || status == http.StatusNotModified
			failed = failed || status >= 400
		}
		if _, excused := except[op]; excused {
			failed = true
		}
		switch {
		case !ok && !failed:
			missing = append(missing, op+": never called")
		case !ok:
			missing = append(missing, op+": no success seen")
		case !failed:
			missing = append(missing, op+": no error seen")
		}
	}
	if len(missing) > 0 {
		t.Errorf("operations of api/openapi.yaml not covered by real answers (%d):\n\t%s", len(missing), strings.Join(missing, "\n\t"))
	}
}

func hasOperation(item *v3.PathItem, method string) bool {
	if item == nil {
		return false
	}
	_, ok := item.GetOperations().Get(strings.ToLower(method))
	return ok
}

// decode undoes the answer's content coding, so its JSON can be validated.
func decode(coding string, body []byte) ([]byte, error) {
	var r io.Reader
	switch coding {
	case "", "identity":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	default:
		return nil, fmt.Errorf("unknown content coding %q", coding)
	}
	return io.ReadAll(r)
}
