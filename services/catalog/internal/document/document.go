// Package document owns the catalog: documents of four types (PDF, LINK,
// MARKDOWN, HTML), their validation, deletion to the trash, restore and
// purge, the rule that keeps their references to tags and media true
// (refs.go), and the ports it needs: a Store with one write path (Update)
// and References, the services that own tags and media.
package document

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
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
	// RelatedIDs are the documents an editor pinned as related, in order
	// (related.go).
	RelatedIDs []string
	// TagSince says which tag each of TagsIDs was checked against: the
	// tag's createdAt as taxonomy gave it (refs.go). Missing for documents
	// stored before it was kept.
	TagSince map[string]time.Time

	IsDeleted bool
	CreatedAt time.Time
	UpdatedAt time.Time
	DeletedAt time.Time // zero unless deleted
	// Who made the change (identity.Name of the back-office caller; empty
	// when unknown: documents stored before names were recorded). A change
	// made by an event (a tag deleted) is nobody's: it keeps UpdatedBy and
	// UpdatedAt.
	CreatedBy string
	UpdatedBy string
	DeletedBy string // empty unless deleted

	// PurgedAt is when a document deleted longer ago than the trash
	// retention was purged: only its id and sequence fields are left (a
	// tombstone, so that sync can still say it was removed).
	PurgedAt time.Time

	// Seq is the document's place in the store's change sequence: every
	// write gives it a higher one. DeletedSeq is the Seq of the write that
	// deleted it (zero unless deleted): once a purged document is gone for
	// good, sync cursors from before it are expired (library/sync.go).
	Seq        int64
	DeletedSeq int64

	// The editorial workflow (editorial.go, draft.go). Version counts the
	// writes of this document (its ETag, and the number of the revision
	// each write keeps); Change says who made the last one, when and why.
	Version int64
	Change  Change
	// Status is Published or Draft ("" is read as Published: documents
	// stored before drafts existed). Draft holds the pending changes of a
	// published document (content fields only), nil when there are none.
	Status Status
	Draft  *Document
	// PublishedAt is when the live version was last made public; PublishAt
	// and UnpublishAt are the scheduled (zero: none).
	PublishedAt time.Time
	PublishAt   time.Time
	UnpublishAt time.Time
}

// Purged reports whether d is the tombstone of a purged document.
func (d Document) Purged() bool { return !d.PurgedAt.IsZero() }

// Refs are the ids of tags and media that documents name.
type Refs struct {
	Tags  []string
	Media []string
}

// Refs returns the references d makes.
func (d Document) Refs() Refs {
	r := Refs{Tags: slices.Clone(d.TagsIDs), Media: slices.Clone(d.ImagesIDs)}
	if d.File != nil {
		r.Media = append(r.Media, d.File.ID)
	}
	if d.Draft != nil { // pending changes obey the same reference rules
		p := d.Draft.Refs()
		r.Tags, r.Media = append(r.Tags, p.Tags...), append(r.Media, p.Media...)
	}
	return r
}

// Covers reports whether every reference of o is in r.
func (r Refs) Covers(o Refs) bool {
	for _, id := range o.Tags {
		if !slices.Contains(r.Tags, id) {
			return false
		}
	}
	for _, id := range o.Media {
		if !slices.Contains(r.Media, id) {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of d, for a closure to change.
func (d Document) Clone() Document {
	d.TagsIDs = slices.Clone(d.TagsIDs)
	d.Sources = slices.Clone(d.Sources)
	d.ImagesIDs = slices.Clone(d.ImagesIDs)
	d.RelatedIDs = slices.Clone(d.RelatedIDs)
	if d.File != nil {
		f := *d.File
		d.File = &f
	}
	if d.TagSince != nil {
		since := make(map[string]time.Time, len(d.TagSince))
		for k, v := range d.TagSince {
			since[k] = v
		}
		d.TagSince = since
	}
	if d.Draft != nil {
		p := d.Draft.Clone()
		d.Draft = &p
	}
	return d
}

// Event is what a write tells the other services, through the store's
// outbox, in the write's transaction.
type Event int

// The events a document write can cause (libs/events: the subject of
// each is library.catalog.document.<name>).
const (
	Deleted       Event = iota + 1 // deleted
	Purged                         // purged
	Publication                    // published
	Unpublication                  // unpublished
	Created                        // created
	Updated                        // updated: the live version's content changed
	DraftSaved                     // draft_saved: a draft's content, or pending changes, saved or discarded
	Scheduled                      // scheduled: publishAt or unpublishAt set, moved or cleared
	Restored                       // restored from the trash
)

// Events returns the events of the change from before to after: every
// change is announced. A create (an import's too) is Created; a move to
// or from the trash, a purge, a publication of an existing document (a
// draft made public, or pending changes made live) and an unpublication
// (draft.go) are each their own event; any other write says what it
// changed: the content the public side sees (Updated), a draft or pending
// changes (DraftSaved), the schedule (Scheduled), one event each. A write
// that changed none of these (only its editorial record) announces
// nothing.
func Events(before, after Document) []Event {
	switch {
	case before.Seq == 0:
		return []Event{Created}
	case after.IsDeleted && !before.IsDeleted:
		return []Event{Deleted}
	case after.Purged() && !before.Purged():
		return []Event{Purged}
	case before.IsDeleted && !after.IsDeleted:
		return []Event{Restored}
	}
	_, wasPublic := PublicView(before)
	_, isPublic := PublicView(after)
	switch {
	case isPublic && !after.PublishedAt.Equal(before.PublishedAt):
		return []Event{Publication}
	case wasPublic && !isPublic:
		return []Event{Unpublication}
	}
	var out []Event
	if !sameContent(contentOf(before), contentOf(after)) {
		if after.State() == Draft {
			out = append(out, DraftSaved)
		} else {
			out = append(out, Updated)
		}
	}
	if (before.Draft == nil) != (after.Draft == nil) || before.Draft != nil && !sameContent(*before.Draft, *after.Draft) {
		out = append(out, DraftSaved)
	}
	if !before.PublishAt.Equal(after.PublishAt) || !before.UnpublishAt.Equal(after.UnpublishAt) {
		out = append(out, Scheduled)
	}
	return slices.Compact(out)
}

// sameContent reports whether a and b have the same content fields (an
// empty list and none are the same; TagSince is bookkeeping).
func sameContent(a, b Document) bool {
	a, b = contentOf(a), contentOf(b)
	a.TagSince, b.TagSince = nil, nil
	for _, d := range []*Document{&a, &b} {
		for _, l := range []*[]string{&d.TagsIDs, &d.Sources, &d.ImagesIDs, &d.RelatedIDs} {
			if len(*l) == 0 {
				*l = nil
			}
		}
	}
	return reflect.DeepEqual(a, b)
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

// Errors the catalog answers with.
var (
	ErrNotFound      = errors.New("document not found")
	ErrDeleted       = errors.New("document is deleted")
	ErrTypeImmutable = errors.New("type cannot change")
	ErrNoFile        = errors.New("document has no file")
	ErrConflict      = errors.New("document changed concurrently")
)

// ErrUnchanged, returned by an Update closure, leaves the document as it
// is: Update then answers the stored document and no error.
var ErrUnchanged = errors.New("document unchanged")

// UnavailableError says a service the catalog depends on did not answer.
type UnavailableError struct {
	Service string
	Err     error
}

func (e *UnavailableError) Error() string { return fmt.Sprintf("%s unavailable: %v", e.Service, e.Err) }
func (e *UnavailableError) Unwrap() error { return e.Err }

// Store keeps documents. Create and Update are the only ways to change
// one: the store owns concurrency and the change sequence; the closure
// owns the rules. The closure runs outside any transaction (it may ask
// other services), then one transaction checks that the document is still
// as the closure saw it (else the closure runs again on what it is now),
// gives it the next Seq and stores it with its revision and the events of
// Events(before, after), so none is lost.
//
// adds are the references the write may add: their guards are read
// before the closure and checked in the transaction (refs.go); a
// reference the new state adds must be among them or the write fails.
type Store interface {
	// Create stores a new document under id, made by fn from a zero
	// Document carrying only the id.
	Create(ctx context.Context, id string, adds Refs, fn func(*Document) error) (Document, error)
	// Update changes the document id with fn; ErrNotFound if there is none.
	// fn returning ErrUnchanged leaves it as it is.
	Update(ctx context.Context, id string, adds Refs, fn func(*Document) error) (Document, error)
	// UpdateEach applies fn to each document of ids, as Update does,
	// skipping the ones that do not exist, and returns those it changed.
	// fn adds no reference.
	UpdateEach(ctx context.Context, ids []string, fn func(*Document) error) ([]Document, error)

	// UpdateNaming applies fn, as UpdateEach does, to every document,
	// deleted or not, that names one of refs, once it raised their guards
	// (refs.go). Each round reads the documents, then calls look (when it
	// read any), then fn. Its cost in database operations does not grow
	// with the number of documents.
	UpdateNaming(ctx context.Context, refs Refs, look func(context.Context) error, fn func(*Document) error) ([]Document, error)

	// Get returns a document, deleted or not (purged ones are gone).
	Get(ctx context.Context, id string) (Document, error)
	// Naming returns the ids of documents, deleted or not, that name one of
	// the references.
	Naming(ctx context.Context, refs Refs) ([]string, error)
	// Pinning returns the ids of documents, deleted or not, that pin one
	// of ids as related.
	Pinning(ctx context.Context, ids []string) ([]string, error)
	// MediaUsers raises the media's guard, then returns the ids of
	// documents not deleted that use it.
	MediaUsers(ctx context.Context, mediaID string) ([]string, error)
	// Trashed returns up to limit ids of documents deleted before the
	// given time and not purged.
	Trashed(ctx context.Context, before time.Time, limit int) ([]string, error)
	// Scheduled returns up to limit ids of documents with a publication or
	// unpublication scheduled at or before now.
	Scheduled(ctx context.Context, now time.Time, limit int) ([]string, error)

	Revisions
}

// References looks up what documents point to, in the services that own it.
// Both return only the ids that exist (Medias also those being deleted,
// marked); an unreachable service is an *UnavailableError. Tags says when
// each tag was created (zero if the taxonomy does not say).
type References interface {
	Tags(ctx context.Context, ids []string) (map[string]time.Time, error)
	Medias(ctx context.Context, ids []string) (map[string]Media, error)
}
