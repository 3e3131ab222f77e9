package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

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
// A Stack with a Contract (Stack.Check) validates every answer its Req, BO
// and Must get. To cover a new route: add it to the document, then add calls
// to TestOpenAPIConformance (a success and an error); the coverage check
// names what is missing.
type Contract struct {
	v     validator.Validator
	model *v3.Document

	mu   sync.Mutex
	seen map[string]map[int]int // "GET /public/documents/{id}/detail" -> status -> count
}

var (
	contractOnce  sync.Once
	contractModel *v3.Document
	contractErr   error
)

// NewContract loads the document (once per test binary).
func NewContract(t testing.TB) *Contract {
	t.Helper()
	contractOnce.Do(func() {
		doc, err := libopenapi.NewDocument(api.YAML())
		if err != nil {
			contractErr = err
			return
		}
		m, err := doc.BuildV3Model()
		if err != nil {
			contractErr = err
			return
		}
		contractModel = &m.Model
	})
	if contractErr != nil {
		t.Fatalf("load api/openapi.yaml: %v", contractErr)
	}
	return &Contract{v: validator.NewValidatorFromV3Model(contractModel), model: contractModel, seen: map[string]map[int]int{}}
}

// Check validates one answer to req and records it. It reports every way
// the answer differs from the document.
func (c *Contract) Check(t testing.TB, req *http.Request, r Response) {
	t.Helper()
	_, _, template := paths.FindPath(req, c.model, nil)
	if template == "" {
		t.Errorf("%s %s answered %d, but the document has no such path", req.Method, req.URL.Path, r.Status)
		return
	}
	key := req.Method + " " + template
	c.mu.Lock()
	if c.seen[key] == nil {
		c.seen[key] = map[int]int{}
	}
	c.seen[key][r.Status]++
	c.mu.Unlock()

	res := &http.Response{
		StatusCode: r.Status, Header: r.Header, Request: req,
		Body: io.NopCloser(bytes.NewReader(r.Body)), ContentLength: int64(len(r.Body)),
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
		body := r.Body
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
