package httpx

import (
	"time"

	"github.com/doclib/libs/validation"
)

// ParseTime reads a date as the API writes it (FormatTime); an empty or
// malformed value adds an error on field to errs and gives the zero time.
// Import routes take the dates an export wrote.
func ParseTime(errs *validation.Errors, field, v string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		errs.Add(field, "is not a date (%s)", TimeFormat)
		return time.Time{}
	}
	return t.UTC()
}

// ParseOptionalTime is ParseTime for a date that may be absent ("").
func ParseOptionalTime(errs *validation.Errors, field, v string) time.Time {
	if v == "" {
		return time.Time{}
	}
	return ParseTime(errs, field, v)
}
