package api

import (
	"encoding/json"
	"io/fs"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"
)

// TestJSONIsTheYAML checks the served JSON says exactly what the YAML says.
func TestJSONIsTheYAML(t *testing.T) {
	t.Parallel()
	raw, err := JSON()
	if err != nil {
		t.Fatalf("convert: %v", err)
	}
	var fromJSON any
	if err := json.Unmarshal(raw, &fromJSON); err != nil {
		t.Fatalf("the JSON form does not parse: %v", err)
	}
	var fromYAML any
	if err := yaml.Unmarshal(YAML(), &fromYAML); err != nil {
		t.Fatalf("the YAML does not parse: %v", err)
	}
	if !reflect.DeepEqual(fromJSON, normalise(fromYAML)) {
		t.Error("the JSON form differs from the YAML document")
	}
	doc := fromJSON.(map[string]any)
	if doc["openapi"] != "3.1.0" || len(doc["paths"].(map[string]any)) == 0 {
		t.Errorf("openapi %v with %d paths; want 3.1.0 with paths", doc["openapi"], len(doc["paths"].(map[string]any)))
	}
}

// normalise turns YAML's values into JSON's: string keys (response codes
// are numbers in YAML), float64 numbers.
func normalise(v any) any {
	switch x := v.(type) {
	case map[any]any:
		m := map[string]any{}
		for k, e := range x {
			m[toString(k)] = normalise(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalise(e)
		}
		return out
	case int:
		return float64(x)
	default:
		return x
	}
}

func toString(k any) string {
	b, _ := json.Marshal(k)
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return string(b)
}

// TestRendererEmbedded checks the /docs page and the renderer files it
// loads are embedded.
func TestRendererEmbedded(t *testing.T) {
	t.Parallel()
	page, assets, err := Docs()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		files fs.FS
		name  string
		min   int
	}{{page, "index.html", 100}, {page, "docs.js", 100}, {assets, RendererScript, 500_000}, {assets, RendererStyle, 10_000}} {
		b, err := fs.ReadFile(f.files, f.name)
		if err != nil || len(b) < f.min {
			t.Errorf("%s: %d bytes, %v; want at least %d", f.name, len(b), err, f.min)
		}
	}
}

// TestRevisionListingDescribesTheFullPage (review finding 10): the answer
// of ?full=true is described, its revisions each a RevisionDetail.
func TestRevisionListingDescribesTheFullPage(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Content map[string]struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"content"`
			} `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	raw, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	schema := doc.Paths["/bo/documents/{id}/revisions"]["get"].Responses["200"].Content["application/json"].Schema
	full := string(doc.Components.Schemas["RevisionFullPage"])
	if !strings.Contains(string(schema), "#/components/schemas/RevisionFullPage") || !strings.Contains(full, "#/components/schemas/RevisionDetail") {
		t.Errorf("the revision listing's answer %s, RevisionFullPage %s; want a full page of RevisionDetail described", schema, full)
	}
}
