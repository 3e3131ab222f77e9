package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/problem"
)

// MaxJSONBody is the largest JSON request body any route takes (CONTRACT.md §2).
const MaxJSONBody = 2 << 20

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
// answers 415 for another content type, 413 over MaxJSONBody, and 400 for a
// body that is not JSON or has values of the wrong type, naming every such
// top-level field. Unknown fields are ignored (CONTRACT.md §1). It returns
// false when it has answered.
func BindJSON(c *gin.Context, dst any) bool {
	if p := decodeJSON(c.Request, dst); p != nil {
		Fail(c, p)
		return false
	}
	return true
}

func decodeJSON(r *http.Request, dst any) *problem.Problem {
	if !IsJSON(r.Header.Get("Content-Type")) {
		return problem.UnsupportedMediaType("this route takes application/json")
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxJSONBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return problem.TooLarge(fmt.Sprintf("a JSON body may be at most %d bytes", MaxJSONBody))
		}
		return problem.BadRequest("the request body could not be read")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	err = dec.Decode(dst)
	if err == nil && dec.More() {
		return problem.BadRequest("the body holds more than one JSON value")
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF):
		return problem.BadRequest("the request body is empty; a JSON object is required")
	case errors.As(err, &typeErr):
		return problem.BadRequest("some values have the wrong JSON type", typeErrors(body, dst)...)
	default:
		return problem.BadRequest("the request body is not valid JSON")
	}
}

// typeErrors decodes each top-level field of body on its own so that every
// field with a value of the wrong type is named, not only the first.
func typeErrors(body []byte, dst any) []problem.FieldError {
	var fields map[string]json.RawMessage
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
		if err := json.Unmarshal(raw, v.Interface()); err != nil {
			out = append(out, problem.FieldError{Field: name, Message: "must be " + jsonKind(f.Type)})
		}
	}
	return out
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
