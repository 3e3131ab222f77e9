package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/doclib/libs/validation"
)

// ErrImportConflict is an import of a media whose id, or whose bytes,
// another media has: an import never changes what is there.
var ErrImportConflict = errors.New("a media with this id or these bytes exists and differs from the imported one")

// DigestError is an import whose bytes are not the ones its record names.
type DigestError struct {
	Size   int64
	SHA256 string
	Want   Media
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("the file has %d bytes, SHA-256 %s; its record says %d bytes, %s", e.Size, e.SHA256, e.Want.Size, e.Want.SHA256)
}

// TypeMismatchError is an import whose bytes are of another type than its
// record names (the bytes decide the type, as at upload).
type TypeMismatchError struct{ Detected, Want string }

func (e *TypeMismatchError) Error() string {
	return fmt.Sprintf("the file is %s; its record says %s", e.Detected, e.Want)
}

// Import stores a media as an export read it (`doclib import`): its id,
// name, dates and authors as given, its bytes streamed from r, which must
// have the record's size and SHA-256 (else a *DigestError and nothing
// stays); a record over the upload limit is a *TooLargeError at once.
// created reports whether it was stored; the same media again changes
// nothing (its bytes are not read); another media under its id or with its
// bytes is ErrImportConflict.
func (s *Service) Import(ctx context.Context, rec Media, r io.Reader) (Media, bool, error) {
	if !ValidID(rec.ID) || rec.Name == "" || len(rec.SHA256) != 64 || rec.CreatedAt.IsZero() {
		return Media{}, false, ErrInvalidImport
	}
	if err := checkImportRecord(rec); err != nil {
		return Media{}, false, err
	}
	look, cancel := context.WithTimeout(ctx, DBBudget)
	got, err := s.store.Get(look, rec.ID)
	cancel()
	if err == nil {
		return got, false, sameImport(got, rec)
	}
	if !errors.Is(err, ErrNotFound) {
		return Media{}, false, err
	}
	if rec.Size > s.cfg.MaxSize { // refused before its bytes are read: none would be kept
		return Media{}, false, &TooLargeError{Limit: s.cfg.MaxSize}
	}
	br, mimeType, err := s.sniff(r)
	if err != nil {
		return Media{}, false, err
	}
	if mimeType != rec.MimeType {
		return Media{}, false, &TypeMismatchError{Detected: mimeType, Want: rec.MimeType}
	}
	m := rec
	m.ObjectKey, m.Width, m.Height, m.Deleting = newObjectKey(), 0, 0, false
	return s.put(ctx, m, br, &rec)
}

// ErrInvalidImport is an import record without id, name, digest or date.
var ErrInvalidImport = errors.New("an imported media needs its id, name, sha256 and createdAt")

// sameImport is nil when stored is the imported record.
func sameImport(stored, imported Media) error {
	same := func(a, b time.Time) bool { return a.Equal(b) }
	if stored.ID == imported.ID && stored.Name == imported.Name && stored.MimeType == imported.MimeType &&
		stored.Size == imported.Size && stored.SHA256 == imported.SHA256 && same(stored.CreatedAt, imported.CreatedAt) &&
		same(stored.UpdatedAt, imported.UpdatedAt) && stored.CreatedBy == imported.CreatedBy && stored.UpdatedBy == imported.UpdatedBy {
		return nil
	}
	return ErrImportConflict
}

// maxAuthor is the longest author name (CallerName in the API reference).
const maxAuthor = 1024

// checkImportRecord applies an upload's rules to an imported record: its
// name is one an upload keeps (CleanName: no directory, no control or
// line-break character...), its authors at most maxAuthor characters.
func checkImportRecord(rec Media) error {
	var errs validation.Errors
	if clean := CleanName(rec.Name); clean != rec.Name {
		errs.Add("name", "is not a name an upload keeps (no directories, control characters or line breaks, at most %d characters): it would be '%s'",
			MaxNameChars, clean)
	}
	for _, a := range [...]struct{ field, name string }{{"createdBy", rec.CreatedBy}, {"updatedBy", rec.UpdatedBy}} {
		if n := utf8.RuneCountInString(a.name); n > maxAuthor {
			errs.Add(a.field, "must be at most %d characters (got %d)", maxAuthor, n)
		}
	}
	return errs.Err()
}
