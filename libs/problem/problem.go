// Package problem is the RFC 9457 problem document every error of the
// document library is answered with.
package problem

import (
	"encoding/json"
	"net/http"
)

// ContentType is the media type of a problem document.
const ContentType = "application/problem+json"

// FieldError names one failing field of a request body.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problem is an RFC 9457 problem document with the contract's extensions:
// a stable machine-readable code and the list of failing fields.
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Code      string       `json:"code"`
	Detail    string       `json:"detail"`
	Errors    []FieldError `json:"errors,omitempty"`
	RequestID string       `json:"requestId,omitempty"`

	// Header holds response headers that go with the problem, such as
	// WWW-Authenticate or Retry-After.
	Header http.Header `json:"-"`
}

// New returns a problem with the given status, code and detail.
func New(status int, code, detail string) *Problem {
	return &Problem{Type: "about:blank", Title: Title(status), Status: status, Code: code, Detail: detail}
}

// Title is the RFC 9110 reason phrase of status (net/http still uses the
// older names for 413 and 422).
func Title(status int) string {
	switch status {
	case http.StatusRequestEntityTooLarge:
		return "Content Too Large"
	case http.StatusUnprocessableEntity:
		return "Unprocessable Content"
	}
	return http.StatusText(status)
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// With returns p with a response header added.
func (p *Problem) With(key, value string) *Problem {
	if p.Header == nil {
		p.Header = http.Header{}
	}
	p.Header.Add(key, value)
	return p
}

// Write sends p on w.
func Write(w http.ResponseWriter, p *Problem) {
	for k, vs := range p.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if p.RequestID == "" {
		p.RequestID = w.Header().Get("X-Request-ID")
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Del("Content-Length")
	w.Header().Del("Content-Disposition")
	w.Header().Del("ETag")
	w.Header().Del("Last-Modified")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

// Constructors for the contract's codes (CONTRACT.md §2).

func BadRequest(detail string, errs ...FieldError) *Problem {
	p := New(http.StatusBadRequest, "bad_request", detail)
	p.Errors = errs
	return p
}

func Unauthorized(detail string) *Problem {
	return New(http.StatusUnauthorized, "unauthorized", detail).With("WWW-Authenticate", `Bearer realm="bo"`)
}

// Forbidden is valid credentials without the right to do this (a viewer
// writing).
func Forbidden(detail string) *Problem { return New(http.StatusForbidden, "forbidden", detail) }

func NotFound(detail string) *Problem { return New(http.StatusNotFound, "not_found", detail) }

func Conflict(code, detail string) *Problem { return New(http.StatusConflict, code, detail) }

func TooLarge(detail string) *Problem {
	return New(http.StatusRequestEntityTooLarge, "payload_too_large", detail)
}

func UnsupportedMediaType(detail string) *Problem {
	return New(http.StatusUnsupportedMediaType, "unsupported_media_type", detail)
}

func Validation(detail string, errs []FieldError) *Problem {
	p := New(http.StatusUnprocessableEntity, "validation_failed", detail)
	p.Errors = errs
	return p
}

func Internal(detail string) *Problem {
	return New(http.StatusInternalServerError, "internal_error", detail)
}

func Unavailable(detail string) *Problem {
	return New(http.StatusServiceUnavailable, "unavailable", detail)
}
