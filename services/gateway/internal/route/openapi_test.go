package route_test

import (
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/doclib/services/gateway/internal/route"
)

// specPath is the contract, relative to this package's directory (where
// go test runs).
const specPath = "../../../../api/openapi.yaml"

// pathParam matches an OpenAPI path parameter such as {id}.
var pathParam = regexp.MustCompile(`\{([^{}/]+)\}`)

// operationMethods are the keys of an OpenAPI Path Item that name an
// operation; the others (parameters, summary, servers, x-*) do not.
var operationMethods = map[string]string{
	"get":     http.MethodGet,
	"put":     http.MethodPut,
	"post":    http.MethodPost,
	"delete":  http.MethodDelete,
	"options": http.MethodOptions,
	"head":    http.MethodHead,
	"patch":   http.MethodPatch,
	"trace":   http.MethodTrace,
}

// specRoutes returns every "METHOD path" of the document's paths under
// /public/ or /bo/, in Gin's pattern syntax ({id} becomes :id).
func specRoutes(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatalf("read the contract: %v", err)
	}
	var doc struct {
		Paths map[string]map[string]yaml.Node `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parse %s: %v", specPath, err)
	}
	if len(doc.Paths) == 0 {
		t.Fatalf("%s has no paths", specPath)
	}
	out := map[string]bool{}
	for path, item := range doc.Paths {
		pattern := pathParam.ReplaceAllString(path, ":$1")
		if !strings.HasPrefix(pattern, "/public/") && !strings.HasPrefix(pattern, "/bo/") {
			continue
		}
		for key := range item {
			if method, ok := operationMethods[strings.ToLower(key)]; ok {
				out[method+" "+pattern] = true
			}
		}
	}
	return out
}

// TestTableMatchesOpenAPI checks that the gateway forwards exactly the
// /public and /bo operations the OpenAPI document describes.
func TestTableMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	spec := specRoutes(t)

	table := map[string]bool{}
	for _, r := range route.Table() {
		key := r.Method + " " + r.Path
		if table[key] {
			t.Errorf("route table lists %s twice", key)
		}
		table[key] = true
	}

	var missing, extra []string
	for key := range spec {
		if !table[key] {
			missing = append(missing, key)
		}
	}
	for key := range table {
		if !spec[key] {
			extra = append(extra, key)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("in %s but not in the route table (%d):\n\t%s", specPath, len(missing), strings.Join(missing, "\n\t"))
	}
	if len(extra) > 0 {
		t.Errorf("in the route table but not in %s (%d):\n\t%s", specPath, len(extra), strings.Join(extra, "\n\t"))
	}
	if len(spec) == 0 {
		t.Errorf("%s has no /public or /bo operation", specPath)
	}
}
