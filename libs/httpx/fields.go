package httpx

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/doclib/libs/problem"
)

// ReadShaped is a request body whose route answers with a read shape that
// a client may send back unchanged (an edited copy of the detail it read):
// ReadShapes returns values of those shapes, whose field names are then
// accepted in the body and ignored. A body that says this has its unknown
// fields refused, every one; one that does not has refused only the names
// that are a near miss of one of its own fields (a misspelling), as
// another shape's fields may be sent back.
type ReadShaped interface {
	ReadShapes() []any
}

// unknownFields returns a 422 naming every top-level member of body that
// dst (a pointer to a struct) does not take, with the field meant when one
// is near; nil when there is none.
func unknownFields(body []byte, dst any) *problem.Problem {
	var members map[string]jsontext.Value
	if json.Unmarshal(body, &members) != nil {
		return nil // not an object: the decoding said so already
	}
	takes := fieldNames(reflect.TypeOf(dst))
	var shapes map[string]bool
	if rs, ok := dst.(ReadShaped); ok {
		shapes = map[string]bool{}
		for _, s := range rs.ReadShapes() {
			for name := range fieldNames(reflect.TypeOf(s)) {
				shapes[name] = true
			}
		}
	}
	var errs []problem.FieldError
	for _, name := range sortedKeys(members) {
		if takes[name] || shapes[name] {
			continue
		}
		meant := nearest(name, takes)
		switch {
		case meant != "":
			errs = append(errs, problem.FieldError{Field: name, Message: fmt.Sprintf("is not a field of this body; did you mean '%s'?", meant)})
		case shapes != nil:
			errs = append(errs, problem.FieldError{Field: name, Message: "is not a field of this body, nor of what this route answers"})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return problem.Validation("some fields of the body are not fields of this route", errs)
}

var fieldCache sync.Map // reflect.Type -> map[string]bool

// fieldNames returns the JSON member names a struct type (or a pointer to
// one) takes, embedded structs without a name inlined, as
// go-json-experiment/json does.
func fieldNames(t reflect.Type) map[string]bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if v, ok := fieldCache.Load(t); ok {
		return v.(map[string]bool)
	}
	names := map[string]bool{}
	if t.Kind() == reflect.Struct {
		addFields(t, names)
	}
	fieldCache.Store(t, names)
	return names
}

func addFields(t reflect.Type, names map[string]bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := strings.Split(f.Tag.Get("json"), ",")
		name := tag[0]
		switch {
		case name == "-" && len(tag) == 1:
		case f.Anonymous && name == "":
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(ft, names)
			}
		case !f.IsExported():
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
}

// nearest returns the name of names that name misspells: the same but for
// case, or within an edit distance of 1 (2 for names of 6 letters or more);
// "" when none is.
func nearest(name string, names map[string]bool) string {
	best, bestDist := "", 0
	for _, n := range sortedKeys(names) {
		if strings.EqualFold(n, name) {
			return n
		}
		limit := 1
		if len(n) >= 6 {
			limit = 2
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(n)); d <= limit && (best == "" || d < bestDist) {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, by bytes (field
// names are ASCII); a name much longer than a field is no misspelling, so
// the work is bounded by the field's length.
func editDistance(a, b string) int {
	if d := len(a) - len(b); d > 2 || d < -2 {
		return 3
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
