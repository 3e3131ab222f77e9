package apicheck

import (
	"fmt"
	"strings"

	liberrors "github.com/pb33f/libopenapi-validator/errors"
)

// reasons joins a validation error's reason and its failures.
func reasons(reason string, failures []*liberrors.SchemaValidationFailure) string {
	parts := []string{reason}
	for _, f := range failures {
		parts = append(parts, fmt.Sprintf("%s: %s", f.FieldPath+" "+f.KeywordLocation, f.Reason))
	}
	return strings.Join(parts, "; ")
}
