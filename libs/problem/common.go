package problem

import (
	"errors"

	"github.com/doclib/libs/validation"
)

// Common maps the errors every service shares: invalid input is 422
// listing every failing field; a database that cannot be reached
// (unavailable says which errors mean that, e.g. mongox.IsUnavailable) is
// 503 naming it; anything else is a 500 whose detail says only that the
// request failed. It lives here, not beside the HTTP helpers, so that they
// need no database driver.
func Common(err error, database string, unavailable func(error) bool) *Problem {
	var verrs validation.Errors
	switch {
	case errors.As(err, &verrs):
		fields := make([]FieldError, len(verrs))
		for i, f := range verrs {
			fields[i] = FieldError{Field: f.Field, Message: f.Message}
		}
		return Validation("the request has invalid fields", fields)
	case unavailable(err):
		return Unavailable("the "+database+" is unavailable; try again shortly").With("Retry-After", "5")
	default:
		return Internal("the request could not be completed because of an internal error")
	}
}
