// Package validation collects every failing field of an input, so one answer
// can name them all.
package validation

import (
	"fmt"
	"strings"
)

// FieldError is one failing field; Field uses the JSON path of the request
// body, e.g. "tagsIds[1]".
type FieldError struct {
	Field   string
	Message string
}

// Errors is a list of failing fields. A nil or empty Errors is no error.
type Errors []FieldError

// Add records a failing field.
func (e *Errors) Add(field, format string, args ...any) {
	*e = append(*e, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Err returns e as an error, or nil when nothing failed.
func (e Errors) Err() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

func (e Errors) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid input: " + strings.Join(parts, "; ")
}
