package apicheck

import (
	"fmt"
	"slices"

	"github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"
)

// Example is one example of the document with the schema it illustrates.
type Example struct {
	Where  string
	Schema *base.Schema
	Value  *yaml.Node
}

// Walk visits every schema of the document, named or inline, once each, and
// collects every example with its schema: examples in schemas (example,
// examples), media types, parameters and headers. Spectral's spectral:oas
// rules oas3-valid-schema-example and oas3-valid-media-example look at the
// same places.
type Walk struct {
	Examples []Example
	Schemas  map[string]*base.Schema // by where they are
	seen     map[*base.Schema]bool
}

// WalkDocument walks the components, then every operation.
func WalkDocument(doc *v3.Document) *Walk {
	w := &Walk{Schemas: map[string]*base.Schema{}, seen: map[*base.Schema]bool{}}
	if c := doc.Components; c != nil {
		for name, s := range pairs(c.Schemas) {
			w.schema("#/components/schemas/"+name, s)
		}
		for name, p := range pairs(c.Parameters) {
			w.parameter("#/components/parameters/"+name, p)
		}
		for name, h := range pairs(c.Headers) {
			w.header("#/components/headers/"+name, h)
		}
		for name, b := range pairs(c.RequestBodies) {
			w.content("#/components/requestBodies/"+name, b.Content)
		}
		for name, r := range pairs(c.Responses) {
			w.response("#/components/responses/"+name, r)
		}
	}
	if doc.Paths != nil {
		for path, item := range pairs(doc.Paths.PathItems) {
			for _, p := range item.Parameters {
				w.parameter(path+" "+p.Name, p)
			}
			for method, op := range pairs(item.GetOperations()) {
				w.operation(method+" "+path, op)
			}
		}
	}
	return w
}

func (w *Walk) operation(where string, op *v3.Operation) {
	for _, p := range op.Parameters {
		w.parameter(where+" parameter "+p.Name, p)
	}
	if op.RequestBody != nil {
		w.content(where+" request", op.RequestBody.Content)
	}
	if op.Responses == nil {
		return
	}
	for code, r := range pairs(op.Responses.Codes) {
		w.response(where+" "+code, r)
	}
	if op.Responses.Default != nil {
		w.response(where+" default", op.Responses.Default)
	}
}

func (w *Walk) response(where string, r *v3.Response) {
	for name, h := range pairs(r.Headers) {
		w.header(where+" header "+name, h)
	}
	w.content(where, r.Content)
}

func (w *Walk) parameter(where string, p *v3.Parameter) {
	w.examples(where, p.Schema, p.Example, p.Examples)
	w.content(where, p.Content)
}

func (w *Walk) header(where string, h *v3.Header) {
	w.examples(where, h.Schema, h.Example, h.Examples)
	w.content(where, h.Content)
}

func (w *Walk) content(where string, content *orderedmap.Map[string, *v3.MediaType]) {
	for mediaType, m := range pairs(content) {
		w.examples(where+" "+mediaType, m.Schema, m.Example, m.Examples)
	}
}

// examples collects the examples of a media type, parameter or header.
func (w *Walk) examples(where string, proxy *base.SchemaProxy, example *yaml.Node, named *orderedmap.Map[string, *base.Example]) {
	if proxy == nil {
		return
	}
	s := proxy.Schema()
	if !proxy.IsReference() {
		w.schema(where+" schema", proxy)
	}
	if example != nil {
		w.Examples = append(w.Examples, Example{where + " example", s, example})
	}
	for name, e := range pairs(named) {
		if e.Value != nil { // an externalValue is not ours to fetch
			w.Examples = append(w.Examples, Example{where + " examples." + name, s, e.Value})
		}
	}
}

// schema records a schema and its examples, then its subschemas. A
// reference is walked where it is defined (components), once.
func (w *Walk) schema(where string, proxy *base.SchemaProxy) {
	s := proxy.Schema()
	if s == nil || w.seen[s] {
		return
	}
	w.seen[s] = true
	w.Schemas[where] = s
	if s.Example != nil {
		w.Examples = append(w.Examples, Example{where + " example", s, s.Example})
	}
	for i, e := range s.Examples {
		w.Examples = append(w.Examples, Example{fmt.Sprintf("%s examples[%d]", where, i), s, e})
	}
	for sub, p := range subschemas(s) {
		if !p.IsReference() {
			w.schema(where+"/"+sub, p)
		}
	}
}

// subschemas are a schema's inline subschemas by their place in it.
func subschemas(s *base.Schema) map[string]*base.SchemaProxy {
	out := map[string]*base.SchemaProxy{}
	for name, p := range pairs(s.Properties) {
		out["properties/"+name] = p
	}
	for kw, list := range map[string][]*base.SchemaProxy{"allOf": s.AllOf, "oneOf": s.OneOf, "anyOf": s.AnyOf, "prefixItems": s.PrefixItems} {
		for i, p := range list {
			out[fmt.Sprintf("%s/%d", kw, i)] = p
		}
	}
	for kw, p := range map[string]*base.SchemaProxy{"if": s.If, "then": s.Then, "else": s.Else, "not": s.Not} {
		if p != nil {
			out[kw] = p
		}
	}
	if s.Items != nil && s.Items.IsA() {
		out["items"] = s.Items.A
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.IsA() {
		out["additionalProperties"] = s.AdditionalProperties.A
	}
	return out
}

// ArraysWithoutItems lists the schemas that say they are arrays and do not
// say of what (Spectral's array-items rule).
func (w *Walk) ArraysWithoutItems() []string {
	var out []string
	for where, s := range w.Schemas {
		if slices.Contains(s.Type, "array") && s.Items == nil && len(s.PrefixItems) == 0 {
			out = append(out, where)
		}
	}
	slices.Sort(out)
	return out
}

// pairs iterates an ordered map that may be nil.
func pairs[K comparable, V any](m *orderedmap.Map[K, V]) func(func(K, V) bool) {
	return func(yield func(K, V) bool) {
		if m == nil {
			return
		}
		for k, v := range m.FromOldest() {
			if !yield(k, v) {
				return
			}
		}
	}
}
