// Package media owns the media files of the document library: their records
// (name, detected type, size, SHA-256, an image's dimensions), the rules of
// an upload (the bytes decide the type, a size limit, a safe name, the same
// bytes stored once: upload.go), the deletion that must ask the catalog
// first, the sweep that finishes what a crash interrupted, and the ports it
// needs: a Store for records, Blobs for the bytes and a UsageChecker for the
// catalog.
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
	SHA256    string // lower-case hex of the bytes; one live media per digest
	// Width and Height are an image's size in pixels, read from its header
	// (0 for other files, and for images stored before they were read).
	Width, Height int
	// Pages is a PDF's page count, PageWidth and PageHeight its first
	// page's size in points (1/72 inch), as shown; 0 for other files and
	// for PDFs that could not be read.
	Pages                 int
	PageWidth, PageHeight float64
	CreatedAt             time.Time
	UpdatedAt             time.Time
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
	// ErrSameBeingDeleted refuses an upload whose bytes are those of a
	// media being deleted: it may come back or go; try again.
	ErrSameBeingDeleted = errors.New("a media with the same bytes is being deleted")
	// ErrDuplicate is a Store's answer to an insert of bytes (a digest)
	// another live media already has.
	ErrDuplicate = errors.New("a media with the same digest exists")
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

// ImageError refuses an upload whose bytes start like an image but whose
// header cannot be read or describes no acceptable image.
type ImageError struct{ Reason string }

func (e *ImageError) Error() string { return "invalid image: " + e.Reason }

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
	// Insert stores m and ends the upload intent of its object, together;
	// ErrDuplicate if a live media, or one being deleted, has its SHA256.
	Insert(ctx context.Context, m Media) error
	// ByDigest returns the media with these bytes, live or being deleted
	// (Deleting set); ErrNotFound if none.
	ByDigest(ctx context.Context, sha256 string) (Media, error)
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
	// the deletion event in the same transaction; ErrMarkLost if token no
	// longer holds it.
	Tombstone(ctx context.Context, id, token string, at time.Time) error

	// ReleaseStuck clears deletion marks set before cutoff (a crash between
	// the steps of a deletion) and returns how many it cleared.
	ReleaseStuck(ctx context.Context, cutoff time.Time) (int64, error)
	// Sweepable returns the tombstones: their objects may be left.
	Sweepable(ctx context.Context) ([]Media, error)
	// RemoveTombstone removes the tombstone id for good, once its objects
	// are removed.
	RemoveTombstone(ctx context.Context, id string) error

	// Unsized returns up to limit live images of the given types whose size
	// was never read (stored before it was), oldest first.
	Unsized(ctx context.Context, types []string, limit int) ([]Media, error)
	// SetSize records an image's width and height; 0 and 0 mark one whose
	// header could not be read, so it is not tried again.
	SetSize(ctx context.Context, id string, width, height int) error

	// Uploads records the objects being written (upload intents), so that
	// what a crash or a failed clean-up leaves in Blobs is found again.
	Uploads() UploadStore
}

// UploadStore keeps one intent per object an upload is writing, from before
// its first byte until its record is stored or the object removed.
type UploadStore interface {
	// Begin records that key is being written, at at.
	Begin(ctx context.Context, key string, at time.Time) error
	// Fail marks the intent of key for the next sweep: the upload failed and
	// its object could not be removed.
	Fail(ctx context.Context, key string) error
	// End removes the intent of key.
	End(ctx context.Context, key string) error
	// Stale returns the keys of failed intents and of those begun before
	// cutoff (their upload cannot still be running).
	Stale(ctx context.Context, cutoff time.Time) ([]string, error)
	// Referenced reports whether a record (in any state) holds key.
	Referenced(ctx context.Context, key string) (bool, error)
}

// Blobs keeps the bytes of media under server-made keys.
type Blobs interface {
	// Put stores r under key. It fails, leaving no object, when r fails.
	Put(ctx context.Context, key, contentType string, r io.Reader) error
	// Open returns the object at key, checked to exist (ErrNotFound if not).
	Open(ctx context.Context, key string) (Object, error)
	// Remove deletes key and any unfinished multipart upload to it; a
	// missing key is not an error.
	Remove(ctx context.Context, key string) error
	// OpenInfo is Open that also says the object's size, time and metadata.
	OpenInfo(ctx context.Context, key string) (Object, BlobInfo, error)
	// PutBytes stores a small object whole, with user metadata.
	PutBytes(ctx context.Context, key, contentType string, b []byte, meta map[string]string) error
	// RemovePrefix deletes every object whose key starts with prefix.
	RemovePrefix(ctx context.Context, prefix string) error
	// AbortUnfinished aborts the multipart uploads begun before cutoff that
	// never finished, whatever their key, and returns how many.
	AbortUnfinished(ctx context.Context, cutoff time.Time) (int, error)
}

// BlobInfo describes a stored object; Meta keys are lower-case.
type BlobInfo struct {
	Size    int64
	ModTime time.Time
	Meta    map[string]string
}

// RenditionPrefix is where the renditions of the original with digest
// sha256 are stored (package rendition names each one below it): deleting
// a media removes them all.
func RenditionPrefix(sha256 string) string { return "renditions/" + sha256 + "/" }

// Object is an opened blob: seekable so ranges can be served.
type Object interface {
	io.ReadSeekCloser
}

// PDFInspector reads what a PDF says of itself (package pdf does, in a
// sandbox): the page count and the first page's size.
type PDFInspector interface {
	Inspect(ctx context.Context, path string) (pages int, width, height float64, err error)
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
