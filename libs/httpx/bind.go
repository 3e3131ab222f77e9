package httpx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/doclib/libs/problem"
)

// MaxJSONBody is the largest JSON request body any route takes (CONTRACT.md §2).
const MaxJSONBody = 2 << 20

// MaxImportJSONBody is the largest body of a document import route (PUT
// /bo/import/documents/...): a document holds up to 1 MiB of content and
// 1 MiB of draft content, which JSON escaping may make several times
// larger; an archive that verifies must import.
const MaxImportJSONBody = 8 << 20

// IsJSON reports whether a Content-Type header names JSON (application/json
// or any +json type).
func IsJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// BindJSON decodes the request body into dst, a pointer to a struct. It
// answers 415 for another content type, 413 over MaxJSONBody, 400 for a
// body that is not strict JSON, and 422 for a member that is no field of
// the body (see DecodeJSON). It returns false when it has answered.
func BindJSON(c *gin.Context, dst any) bool {
	return BindJSONUpTo(c, dst, MaxJSONBody)
}

// BindJSONUpTo is BindJSON with another size limit (a route's own).
func BindJSONUpTo(c *gin.Context, dst any, limit int64) bool {
	if p := readJSON(c.Request, dst, limit); p != nil {
		Fail(c, p)
		return false
	}
	return true
}

func readJSON(r *http.Request, dst any, limit int64) *problem.Problem {
	if !IsJSON(r.Header.Get("Content-Type")) {
		return problem.UnsupportedMediaType("this route takes application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return problem.TooLarge(fmt.Sprintf("a JSON body may be at most %d bytes", limit))
		}
		return problem.BadRequest("the request body could not be read")
	}
	return DecodeJSON(body, dst)
}

// DecodeJSON decodes body into dst, a pointer to a struct, strictly (RFC
// 8259 as I-JSON, RFC 7493, reads it): member names match the struct's
// exactly (no case folding), a name repeated in an object, invalid UTF-8 and
// escapes of lone surrogates are 400, and so is null inside an array of
// strings. Every top-level field with a value of the wrong type is named.
// A top-level member that dst does not take is a 422 naming it, with the
// field meant, when it misspells one of dst's (tagIds for tagsIds), or
// when dst is ReadShaped and the member belongs to none of its read shapes
// either; other members, such as the read-only fields of a detail sent
// back, are ignored.
// It uses github.com/go-json-experiment/json, the encoding/json/v2 of Go
// 1.25+ (an experiment until Go 1.27), whose defaults are exactly these
// rules, where encoding/json folds case, keeps the last duplicate and turns
// bad text into U+FFFD.
func DecodeJSON(body []byte, dst any) *problem.Problem {
	err := json.Unmarshal(body, dst, strict)
	var syn *jsontext.SyntacticError
	var sem *json.SemanticError
	switch {
	case err == nil:
		return unknownFields(body, dst)
	case len(bytes.TrimSpace(body)) == 0:
		return problem.BadRequest("the request body is empty; a JSON object is required")
	case errors.As(err, &syn):
		detail := syntaxDetail(syn)
		if detail == notJSON || syn.JSONPointer == "" {
			return problem.BadRequest(detail)
		}
		return problem.BadRequest(detail, problem.FieldError{Field: pointerField(syn.JSONPointer), Message: detail})
	case errors.As(err, &sem) && sem.JSONPointer == "":
		return problem.BadRequest("the body must be a JSON object", problem.FieldError{Field: "", Message: "must be an object"})
	case errors.As(err, &sem):
		return problem.BadRequest("some values have the wrong JSON type", typeErrors(body, dst)...)
	default:
		return problem.BadRequest("the request body is not valid JSON")
	}
}

// strict adds to the v2 defaults: null is not a string inside an array
// (["a", null] is a mistake, not ["a", ""]). A null field is still the
// field left out.
var strict = json.WithUnmarshalers(json.UnmarshalFromFunc(func(dec *jsontext.Decoder, _ *string) error {
	if dec.PeekKind() == 'n' {
		if kind, _ := dec.StackIndex(dec.StackDepth()); kind == '[' {
			return errNullInArray
		}
	}
	return errors.ErrUnsupported // the default decoding
}))

var errNullInArray = errors.New("null is not a string")

func syntaxDetail(e *jsontext.SyntacticError) string {
	switch {
	case errors.Is(e, jsontext.ErrDuplicateName):
		return fmt.Sprintf("the key %s appears twice in the same object", strconv.Quote(e.JSONPointer.LastToken()))
	case strings.Contains(e.Error(), "UTF-8") || strings.Contains(e.Error(), "surrogate"):
		return "a string is not valid UTF-8 (invalid bytes or a lone surrogate escape)"
	}
	return notJSON
}

const notJSON = "the request body is not valid JSON"

// pointerField turns a JSON pointer ("/tagsIds/1") into the field notation
// of problem documents ("tagsIds[1]").
func pointerField(p jsontext.Pointer) string {
	var b strings.Builder
	for tok := range p.Tokens() {
		if _, err := strconv.ParseUint(tok, 10, 32); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

// typeErrors decodes each top-level field of body on its own so that every
// field with a value of the wrong type is named, not only the first.
func typeErrors(body []byte, dst any) []problem.FieldError {
	var fields map[string]jsontext.Value
	if err := json.Unmarshal(body, &fields); err != nil {
		return []problem.FieldError{{Field: "", Message: "the body must be a JSON object"}}
	}
	t := reflect.TypeOf(dst).Elem()
	var out []problem.FieldError
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		raw, ok := fields[name]
		if name == "" || name == "-" || !ok {
			continue
		}
		v := reflect.New(f.Type)
		if err := json.Unmarshal(raw, v.Interface(), strict); err != nil {
			field, msg := name, "must be "+jsonKind(f.Type)
			var sem *json.SemanticError
			if errors.As(err, &sem) && sem.JSONPointer != "" {
				field += pointerIndex(sem.JSONPointer)
				switch {
				case errors.Is(err, errNullInArray):
					msg = "must not be null"
				case f.Type.Kind() == reflect.Slice:
					msg = "must be " + jsonKind(f.Type.Elem())
				default:
					msg = "has a value of the wrong type"
				}
			}
			out = append(out, problem.FieldError{Field: field, Message: msg})
		}
	}
	return out
}

// pointerIndex renders the rest of a pointer inside a field ("/1" -> "[1]").
func pointerIndex(p jsontext.Pointer) string {
	f := pointerField(p)
	if f != "" && f[0] != '[' {
		return "." + f
	}
	return f
}
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(jsonKind(t.Elem()), "a "), "an ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	default:
		return "a number"
	}
}
