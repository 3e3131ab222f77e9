package document

// The editorial record of a document: a version per write (the ETag a
// back-office client sends back in If-Match), and a revision per write,
// kept in the store's revisions (Revisions), keyed (document id, version):
// the document as it is after the write, with who, when and why in Change,
// stored in the write's transaction.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/doclib/libs/identity"
)

// Change is who made a document's last write, when and why: the route
// (for example "PATCH /bo/documents/:id") or the event
// ("event library.taxonomy.tag.deleted"). By is empty for an event's
// change.
type Change struct {
	By  string
	At  time.Time
	Why string
}

// Revision is a document as it was after one of its writes.
type Revision struct {
	DocumentID string
	Version    int64
	Change     Change
	// Doc is the document; empty in a listing.
	Doc Document
}

// Why a write was made, as revisions record it.
const (
	WhyCreate          = "POST /bo/documents"
	WhyUpdate          = "PATCH /bo/documents/:id"
	WhyDelete          = "DELETE /bo/documents/:id"
	WhyRestore         = "POST /bo/documents/:id/restore"
	WhyRestoreRevision = "POST /bo/documents/:id/revisions/:rev/restore"
	WhyPublish         = "POST /bo/documents/:id/publish"
	WhyUnpublish       = "POST /bo/documents/:id/unpublish"
	WhyDiscardDraft    = "DELETE /bo/documents/:id/draft"
	WhyScheduled       = "schedule"
	whyEvent           = "event "
)

// Revisions keeps the revisions of documents. Put is idempotent: a
// revision already stored under its (document id, version) is left as it
// is.
type Revisions interface {
	PutRevisions(ctx context.Context, revs []Revision) error
	// ListRevisions returns up to limit revisions of the document with a
	// version below before, newest first, with their Doc only if withDocs.
	ListRevisions(ctx context.Context, id string, before int64, limit int, withDocs bool) ([]Revision, error)
	// GetRevision returns one revision; ErrRevisionNotFound if there is none.
	GetRevision(ctx context.Context, id string, version int64) (Revision, error)
	// NewestRevision returns the highest version of the document's stored
	// revisions (0: none).
	NewestRevision(ctx context.Context, id string) (int64, error)
	// ExpireRevisions removes those made before the time (retention by
	// age; the document itself stays as it is). The retention by count is
	// the store's, applied in each write's transaction.
	ExpireRevisions(ctx context.Context, before time.Time) (int64, error)
}

// Errors of the editorial workflow.
var (
	ErrVersionMismatch  = errors.New("the document changed since it was read")
	ErrRevisionNotFound = errors.New("revision not found")
)

type ifMatchKey struct{}

// IfMatch returns ctx carrying the versions the caller read (If-Match): a
// write of a document at another version fails with ErrVersionMismatch and
// changes nothing. An empty list means any version (If-Match: *). In the
// context, not a parameter, so that every write's signature stays as it
// is and the check is made in one place (write).
func IfMatch(ctx context.Context, versions []int64) context.Context {
	return context.WithValue(ctx, ifMatchKey{}, versions)
}

// matches reports whether a document at version satisfies ctx's If-Match.
func matches(ctx context.Context, version int64) bool {
	want, ok := ctx.Value(ifMatchKey{}).([]int64)
	if !ok || len(want) == 0 {
		return true
	}
	for _, v := range want {
		if v == version {
			return true
		}
	}
	return false
}

// ETag is the entity tag of a document version, for If-Match.
func ETag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// ParseIfMatch reads an If-Match header: the versions it names, or nil for
// "*". A tag this service did not make names no version (-1): it matches
// nothing, so the write is refused rather than made blindly. So does a
// weak tag (W/"..."): If-Match uses the strong comparison (RFC 9110
// §13.1.1), which a weak tag never passes. The back-office detail's tag
// carries a digest after the version ("12.ab..."): it names its version
// only when current, which knows the detail's tags now, reports it as one
// of them, compared whole; with current nil, it names none.
func ParseIfMatch(header string, current func(tag string) bool) []int64 {
	var out []int64
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" {
			return nil
		}
		if strings.HasPrefix(tag, "W/") {
			out = append(out, -1)
			continue
		}
		v := tagVersion(tag)
		if strings.Contains(tag, ".") && (current == nil || !current(tag)) {
			v = -1
		}
		out = append(out, v)
	}
	return out
}

// tagVersion returns the version a strong tag starts with, -1 when none.
func tagVersion(tag string) int64 {
	tag = strings.Trim(tag, `"`)
	if i := strings.IndexByte(tag, '.'); i >= 0 {
		tag = tag[:i]
	}
	v, err := strconv.ParseInt(tag, 10, 64)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// write wraps a write's rules (fn) with the editorial record: the If-Match
// check, the next version, and who/when/why (the store keeps the revision
// of the new version in the write's transaction).
func (s *Service) write(ctx context.Context, why string, fn func(*Document) error) func(*Document) error {
	return s.record(ctx, why, s.now, fn)
}

// record is write with the change's time taken from at: a write of many
// documents at once (a tag deletion) gives them all one time, so that the
// store can write those that only lose the same tags with one statement.
func (s *Service) record(ctx context.Context, why string, at func() time.Time, fn func(*Document) error) func(*Document) error {
	return func(d *Document) error {
		if d.Seq > 0 && !matches(ctx, d.Version) {
			return ErrVersionMismatch
		}
		before := d.Clone()
		if err := fn(d); err != nil {
			return err
		}
		if s.noRevisions {
			return nil
		}
		d.Version = before.Version + 1
		// Just after this document's last change when that is not before
		// (another replica's clock ahead): its revisions' times run forward,
		// so age retention never keeps an older one and removes a newer.
		when := at()
		if !before.Change.At.Before(when) {
			when = before.Change.At.Add(time.Millisecond)
		}
		d.Change = Change{By: identity.Name(ctx), At: when, Why: why}
		return nil
	}
}

// ExpireRevisions applies the retention by age, at most once per
// expireEvery (every replica runs it often). Idempotent, safe on several
// replicas.
func (s *Service) ExpireRevisions(ctx context.Context) (int64, error) {
	now := s.now()
	if s.retention.Age <= 0 || now.Sub(time.Unix(0, s.expiredAt.Load())) < expireEvery {
		return 0, nil
	}
	n, err := s.store.ExpireRevisions(ctx, now.Add(-s.retention.Age))
	if err == nil {
		s.expiredAt.Store(now.UnixNano())
	}
	return n, err
}

// expireEvery is how often a replica applies the retention by age: an age
// is hours or days, so a minute late is nothing.
const expireEvery = time.Minute

// Retention bounds the revisions kept per document: the Count newest, or
// those younger than Age. Zero: all.
type Retention struct {
	Count int
	Age   time.Duration
}

// ParseRetention reads REVISION_RETENTION: "" (keep all), a count ("50")
// or an age ("720h", Go's duration syntax).
func ParseRetention(s string) (Retention, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Retention{}, nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 {
			return Retention{}, errors.New("a count of revisions must be at least 1")
		}
		return Retention{Count: n}, nil
	}
	age, err := time.ParseDuration(s)
	if err != nil || age <= 0 {
		return Retention{}, errors.New(`must be a count ("50") or a positive age ("720h")`)
	}
	return Retention{Age: age}, nil
}

// SetRetention sets how long revisions are kept (default: always); the
// retention by count is the store's.
func (s *Service) SetRetention(r Retention) { s.retention = r }

// RevisionPage is a page of a document's revisions, newest first, and
// where the next starts (0: none).
type RevisionPage struct {
	Revisions  []Revision
	NextBefore int64
}

// Revisions returns a page of the document's revisions, newest first,
// below version before (0: from the newest), with the document each kept
// if withDocs. The page covers limit versions, whichever of them are
// stored: NextBefore is the lowest version covered while it is above 1, so
// a revision missing from a page never ends the listing early. A page
// holding none ends it: retention removes the oldest revisions, so nothing
// older is kept (and a history retained down to its last few is not walked
// to version 1 one empty page at a time).
func (s *Service) Revisions(ctx context.Context, id string, before int64, limit int, withDocs bool) (RevisionPage, error) {
	d, err := s.store.Get(ctx, id)
	if err != nil {
		return RevisionPage{}, err
	}
	if before == 0 || before > d.Version {
		before = d.Version + 1
	}
	revs, err := s.store.ListRevisions(ctx, id, before, limit, withDocs)
	if err != nil {
		return RevisionPage{}, err
	}
	page := RevisionPage{Revisions: revs}
	if lowest := before - int64(limit); lowest > 1 && len(revs) > 0 {
		page.NextBefore = lowest
	}
	return page, nil
}

// Revision returns one revision of the document.
func (s *Service) Revision(ctx context.Context, id string, version int64) (Revision, error) {
	if _, err := s.store.Get(ctx, id); err != nil {
		return Revision{}, err
	}
	return s.store.GetRevision(ctx, id, version)
}

// Get returns a document as the back office sees it (both versions).
func (s *Service) Get(ctx context.Context, id string) (Document, error) { return s.store.Get(ctx, id) }
