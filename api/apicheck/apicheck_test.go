package apicheck

import (
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"go.yaml.in/yaml/v3"
)

const (
	documentPath = "../openapi.yaml"
	baselinePath = "../baseline/openapi.yaml"
)

var load = sync.OnceValues(func() (libopenapi.Document, error) {
	raw, err := os.ReadFile(documentPath)
	if err != nil {
		return nil, err
	}
	return libopenapi.NewDocument(raw)
})

func model(t *testing.T) *v3.Document {
	t.Helper()
	doc, err := load()
	if err != nil {
		t.Fatalf("%s does not load: %v", documentPath, err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		t.Fatalf("%s does not build: %v", documentPath, err)
	}
	return &m.Model
}

// TestTheDocumentIsValidOpenAPI31 validates the document against the
// OpenAPI 3.1 schema (the official one, as libopenapi ships it).
func TestTheDocumentIsValidOpenAPI31(t *testing.T) {
	t.Parallel()
	doc, err := load()
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Fatalf("openapi %q; want 3.1.0", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s: %s", e.Message, e.Reason)
			for _, f := range e.SchemaValidationErrors {
				t.Errorf("  %s (line %d): %s", f.FieldPath, f.Line, f.Reason)
			}
		}
	}
}

// TestEveryExampleMatchesItsSchema: an example is what a client developer
// copies; one the schema refuses teaches the wrong shape.
func TestEveryExampleMatchesItsSchema(t *testing.T) {
	t.Parallel()
	w := WalkDocument(model(t))
	if len(w.Examples) < 50 {
		t.Fatalf("found %d examples; the walk misses most of them", len(w.Examples))
	}
	sv := schema_validation.NewSchemaValidator()
	for _, e := range w.Examples {
		var value any
		if err := e.Value.Decode(&value); err != nil {
			t.Errorf("%s: does not decode: %v", e.Where, err)
			continue
		}
		if ok, errs := sv.ValidateSchemaObject(e.Schema, value); !ok {
			for _, ve := range errs {
				t.Errorf("%s (line %d): %s", e.Where, e.Value.Line, reasons(ve.Reason, ve.SchemaValidationErrors))
			}
		}
	}
}

// TestEveryArrayDeclaresItsItems: an array without items accepts anything.
func TestEveryArrayDeclaresItsItems(t *testing.T) {
	t.Parallel()
	for _, where := range WalkDocument(model(t)).ArraysWithoutItems() {
		t.Errorf("%s: an array without items", where)
	}
}

// TestSchemasUseTheDefaultDialect keeps the document one that contract
// testing tools validate (issue 21 item 13): with a top-level
// jsonSchemaDialect, even OpenAPI's own base dialect, Prism validated no
// answer at all. Without it, the schemas are in OpenAPI 3.1's default
// dialect, which every tool knows.
func TestSchemasUseTheDefaultDialect(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(documentPath)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if d, ok := top["jsonSchemaDialect"]; ok {
		t.Errorf("jsonSchemaDialect: %v; remove it (the default dialect is OpenAPI 3.1's, and Prism skips every schema under a declared one)", d)
	}
	if strings.Contains(string(raw), "$schema:") {
		t.Error("a schema declares $schema; tools that skip unknown dialects would skip it")
	}
}

// TestTheValidatorRefusesAWrongAnswer shows the checks above do check: the
// same validator, on this document's schema, refuses a wrong value.
func TestTheValidatorRefusesAWrongAnswer(t *testing.T) {
	t.Parallel()
	proxy := model(t).Components.Schemas.GetOrZero("PublicConfig")
	if proxy == nil {
		t.Fatal("no PublicConfig schema")
	}
	sv := schema_validation.NewSchemaValidator()
	if ok, _ := sv.ValidateSchemaObject(proxy.Schema(), map[string]any{"moderatorEmail": 5}); ok {
		t.Error(`{"moderatorEmail": 5} passed as a PublicConfig`)
	}
	if ok, errs := sv.ValidateSchemaObject(proxy.Schema(), map[string]any{"moderatorEmail": "m@example.org"}); !ok {
		t.Errorf("a right PublicConfig refused: %v", errs)
	}
}
