// Package media owns the media files of the document library: their records
// (name, detected type, size, checksum), the rules of an upload (the bytes
// decide the type, a size limit, a safe name), the deletion that must ask the
// catalog first, and the ports it needs: a Store for records, Blobs for the
// bytes and a UsageChecker for the catalog.
package media

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Media is one stored file.
type Media struct {
	ID        string
	Name      string
	MimeType  string
	Size      int64
	ObjectKey string // where the bytes are in Blobs; never derived from Name
	SHA256    string // lower-case hex of the bytes
	CreatedAt time.Time
	UpdatedAt time.Time
	// CreatedBy and UpdatedBy name the back-office caller who uploaded the
	// file (identity.Name); a media is never changed after, so they are the
	// same. Empty for records made before names were recorded.
	CreatedBy string
	UpdatedBy string
	// Deleting is set on a record a deletion holds (Lookup only): it may
	// still come back, if the deletion finds the media in use.
	Deleting bool
}

// IsImage reports whether m is an image (the catalog's imagesIds rule).
func (m Media) IsImage() bool { return strings.HasPrefix(m.MimeType, "image/") }

// Errors the media service answers with.
var (
	ErrNotFound = errors.New("media not found")
	// ErrStorageUnavailable wraps failures of the object storage that a
	// retry may cure: unreachable, too slow, or a server error.
	ErrStorageUnavailable = errors.New("object storage unavailable")
	// ErrUsageUnknown means the catalog could not say whether the media is
	// used; the deletion was undone.
	ErrUsageUnknown = errors.New("media usage unknown")
	// ErrNoFile means the upload had no part named "file".
	ErrNoFile = errors.New("no file part")
	// ErrMarkLost means a deletion's mark was cleared before it finished
	// (it took longer than StuckAfter): nothing was deleted.
	ErrMarkLost = errors.New("media deletion mark lost")
)

// TooLargeError refuses an upload over the limit.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string { return fmt.Sprintf("upload over %d bytes", e.Limit) }

// UnsupportedTypeError refuses an upload whose bytes are of a type not allowed.
type UnsupportedTypeError struct {
	Detected string
	Allowed  []string
}

func (e *UnsupportedTypeError) Error() string { return "unsupported media type " + e.Detected }

// IncompleteError means the upload's body could not be read to its end (the
// client went away or sent a malformed body).
type IncompleteError struct{ Err error }

func (e *IncompleteError) Error() string { return "upload body incomplete: " + e.Err.Error() }
func (e *IncompleteError) Unwrap() error { return e.Err }

// InUseError refuses the deletion of a media that live documents use.
type InUseError struct{ DocumentIDs []string }

func (e *InUseError) Error() string {
	return "media used by documents " + strings.Join(e.DocumentIDs, ", ")
}

// Store persists media records. Lookups see only live records: not being
// deleted (deletingAt) and not deleted (deletedAt); Lookup alone also sees
// records being deleted. Implementations report an
// unknown or invisible id with ErrNotFound.
type Store interface {
	Insert(ctx context.Context, m Media) error
	Get(ctx context.Context, id string) (Media, error)
	// List returns every live record, newest first.
	List(ctx context.Context) ([]Media, error)
	// Lookup returns the records among ids that are live or being deleted
	// (Deleting set), in no particular order.
	Lookup(ctx context.Context, ids []string) ([]Media, error)

	// MarkDeleting hides the live record id under token; ErrNotFound when it
	// is not live (unknown, deleted, or another deletion holds it).
	MarkDeleting(ctx context.Context, id, token string, at time.Time) (Media, error)
	// ClearDeleting makes the record live again if token still holds it.
	ClearDeleting(ctx context.Context, id, token string) error
	// Tombstone turns the record held by token into a tombstone and records
	// the deletion event in the same write; ErrMarkLost if token no longer
	// holds it.
	Tombstone(ctx context.Context, id, token string, at time.Time) error

	// ReleaseStuck clears deletion marks set before cutoff (a crash between
	// the steps of a deletion) and returns how many it cleared.
	ReleaseStuck(ctx context.Context, cutoff time.Time) (int64, error)
	// Swept returns the tombstones whose events are all published.
	Swept(ctx context.Context) ([]Media, error)
	// Purge removes the tombstone id if its events are all published.
	Purge(ctx context.Context, id string) error
}

// Blobs keeps the bytes of media under server-made keys.
type Blobs interface {
	// Put stores r under key. It fails, leaving no object, when r fails.
	Put(ctx context.Context, key, contentType string, r io.Reader) error
	// Open returns the object at key, checked to exist (ErrNotFound if not).
	Open(ctx context.Context, key string) (Object, error)
	// Remove deletes key; a missing key is not an error.
	Remove(ctx context.Context, key string) error
}

// Object is an opened blob: seekable so ranges can be served.
type Object interface {
	io.ReadSeekCloser
}

// Usage is what the catalog says about one media.
type Usage struct {
	InUse       bool
	DocumentIDs []string
}

// UsageChecker asks the catalog which live documents use a media.
type UsageChecker interface {
	Usage(ctx context.Context, id string) (Usage, error)
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidID reports whether id could be a media id; anything else is unknown
// without asking the store.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// NewID returns a media id: 128 random bits in unpadded base64url (22
// characters, URL-safe, opaque).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// newObjectKey returns a fresh object key, unrelated to the id and the name.
func newObjectKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "media/" + hex.EncodeToString(b[:])
}
