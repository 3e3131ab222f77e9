// Package document owns the catalog: documents of four types (PDF, LINK,
// MARKDOWN, HTML), their validation, soft deletion and restore, and what the
// catalog needs from storage and from the services that own tags and media.
package document

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Type is a document's type; it never changes after creation.
type Type string

// The four types of the base document.
const (
	PDF      Type = "PDF"
	Link     Type = "LINK"
	Markdown Type = "MARKDOWN"
	HTML     Type = "HTML"
)

// Valid reports whether t is one of the four types.
func (t Type) Valid() bool { return t == PDF || t == Link || t == Markdown || t == HTML }

// Inline reports whether documents of type t carry their content.
func (t Type) Inline() bool { return t == Markdown || t == HTML }

// File is the media a PDF document shows; Name comes from the media record.
type File struct {
	ID   string
	Name string
}

// Document is one entry of the library. Fields that do not apply to its
// type are empty: URL only on LINK, Content/Sources/ImagesIDs only on
// MARKDOWN and HTML, File only on PDF.
type Document struct {
	ID        string
	Title     string
	Type      Type
	URL       string
	TagsIDs   []string
	Content   string
	Sources   []string
	ImagesIDs []string
	File      *File
	IsDeleted bool
	CreatedAt time.Time
	UpdatedAt time.Time
	// RefsAt is when the references were last checked (taken before the
	// lookups of a create or a PATCH; zero for documents stored before it
	// was kept). A tag created after it is not the one the document named.
	RefsAt time.Time
}

// Summary is a listing entry: a document without its content.
type Summary struct {
	ID        string
	Title     string
	Type      Type
	URL       string
	TagsIDs   []string
	IsDeleted bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Media is what the catalog knows of a media record when checking a reference.
type Media struct {
	ID       string
	Name     string
	MimeType string
	// Deleting: a deletion of the media is under way. A new reference to
	// it is refused; a stored one stays until the deletion is done.
	Deleting bool
}

// Mark says that the references of a document written at At are still to
// be checked again (Service.settle).
type Mark struct {
	DocumentID string
	At         time.Time
}

// Errors the catalog answers with.
var (
	ErrNotFound      = errors.New("document not found")
	ErrDeleted       = errors.New("document is deleted")
	ErrTypeImmutable = errors.New("type cannot change")
	ErrNoFile        = errors.New("document has no file")
	ErrConflict      = errors.New("document changed concurrently")
)

// UnavailableError says a service the catalog depends on did not answer.
type UnavailableError struct {
	Service string
	Err     error
}

func (e *UnavailableError) Error() string { return fmt.Sprintf("%s unavailable: %v", e.Service, e.Err) }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Store persists documents. Get returns deleted documents too. List returns
// summaries newest first, read without content.
//
// Insert, Replace and Restore first mark the document "references
// unsettled" (see Service.settle); Unsettled lists the marks and Settle
// clears one.
type Store interface {
	Insert(ctx context.Context, d Document) error
	Get(ctx context.Context, id string) (Document, error)
	List(ctx context.Context, withDeleted bool) ([]Summary, error)
	// Replace stores d over the live document d.ID if it still has the
	// updatedAt it was read with (ErrConflict otherwise, ErrDeleted if it
	// was deleted meanwhile).
	Replace(ctx context.Context, d Document, readAt time.Time) error
	// SoftDelete marks the document deleted and records its deletion event,
	// in one write; deleted is false when it already was.
	SoftDelete(ctx context.Context, id string, at time.Time) (deleted bool, err error)
	Restore(ctx context.Context, id string, at time.Time) (Document, error)
	// Unsettled returns up to limit marks made before the given time.
	Unsettled(ctx context.Context, before time.Time, limit int) ([]Mark, error)
	// Settle removes the gone tags and media from the marked document, if
	// it still has refsAt (a later write checked its own references), then
	// clears the mark unless a later write replaced it.
	Settle(ctx context.Context, m Mark, refsAt time.Time, goneTags, goneMedia []string) error
	// MediaUsers returns the ids of documents not deleted that use the media.
	MediaUsers(ctx context.Context, mediaID string) ([]string, error)
}

// References looks up what documents point to, in the services that own it.
// Both return only the ids that exist (Medias also those being deleted,
// marked); an unreachable service is an *UnavailableError. Tags says when
// each tag was created (zero if the taxonomy does not say).
type References interface {
	Tags(ctx context.Context, ids []string) (map[string]time.Time, error)
	Medias(ctx context.Context, ids []string) (map[string]Media, error)
}
