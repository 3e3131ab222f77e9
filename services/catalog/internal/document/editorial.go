package document

// The editorial record of a document: a version per write (the ETag a
// back-office client sends back in If-Match), and a revision per write,
// kept in the store's revisions (Revisions), keyed (document id, version).
//
// # A revision is never lost nor invented, without transactions
//
// The document write and the revision write are two single-document
// writes. The document is written first, with RevisionPending set: it is
// itself the revision of its version (the document as it is after the
// write, with who, when and why in Change). The revision record is
// inserted later (idempotently: a second insert of the same key changes
// nothing), by whichever comes first: the next write of the document,
// which stores the revision of the state it starts from before it commits
// (while it holds the document, so no third write interleaves); a read of
// the document's revisions (repair); or a background job (Settle) for
// documents marked for longer than a few seconds, which also clears the
// mark if the document is still at that version. A revision is only ever
// made from a committed document, so none is invented; the mark stays
// until it is stored, so none is lost. A write thus costs one insert more
// (the previous version's revision), not two writes and a wait.

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
	// SettleRevision clears the document's RevisionPending mark if it is
	// still at version.
	SettleRevision(ctx context.Context, id string, version int64) error
	// Unsettled returns up to limit documents whose mark is older than the
	// given time (by Change.At).
	Unsettled(ctx context.Context, before time.Time, limit int) ([]Document, error)
	// ListRevisions returns up to limit revisions of the document with a
	// version below before, newest first, with their Doc only if withDocs.
	ListRevisions(ctx context.Context, id string, before int64, limit int, withDocs bool) ([]Revision, error)
	// GetRevision returns one revision; ErrRevisionNotFound if there is none.
	GetRevision(ctx context.Context, id string, version int64) (Revision, error)
	// TrimRevisions removes the revisions of each document up to its
	// version (retention by count), ExpireRevisions those made before the
	// time (retention by age; the document itself stays as it is).
	TrimRevisions(ctx context.Context, upTo map[string]int64) error
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
// check, the next version, who/when/why, and the revision of the state it
// starts from if that one is still unsettled (see the file comment).
func (s *Service) write(ctx context.Context, why string, fn func(*Document) error) func(*Document) error {
	return s.record(ctx, why, nil, fn)
}

// revisionBatch is the editorial record of a write of many documents at
// once (a tag deletion): one time per round for all of them (at, set when
// the round holds its documents), and the revisions of
// the states they start from, stored together by flush before the store
// commits (the store calls it once per round), so the write costs a
// bounded number of database operations whatever the number of documents.
type revisionBatch struct {
	at   time.Time
	revs []Revision
}

// flush stores the batch's revisions, then applies the retention by count.
func (s *Service) flush(b *revisionBatch) func(context.Context) error {
	return func(ctx context.Context) error {
		revs := b.revs
		b.revs = nil
		if err := s.store.PutRevisions(ctx, revs); err != nil {
			return err
		}
		s.trim(ctx, revs...)
		return nil
	}
}

// record is write; with a batch, the revision of the state a document
// starts from goes into it instead of to the store at once.
func (s *Service) record(ctx context.Context, why string, batch *revisionBatch, fn func(*Document) error) func(*Document) error {
	return func(d *Document) error {
		if d.Seq > 0 && !matches(ctx, d.Version) {
			return ErrVersionMismatch
		}
		before := d.Clone()
		if err := fn(d); err != nil {
			return err
		}
		d.Version = before.Version + 1
		if s.noRevisions {
			return nil
		}
		at := s.now()
		if batch != nil {
			at = batch.at
		}
		// Just after this document's last change when that is not before
		// (another replica's clock ahead): its revisions' times run forward,
		// so age retention never keeps an older one and removes a newer.
		if !before.Change.At.Before(at) {
			at = before.Change.At.Add(time.Millisecond)
		}
		switch {
		case batch != nil:
			if before.RevisionPending {
				batch.revs = append(batch.revs, revisionOf(before))
			}
		case before.RevisionPending:
			rev := revisionOf(before)
			if err := s.store.PutRevisions(ctx, []Revision{rev}); err != nil {
				return err
			}
			s.trim(ctx, rev)
		}
		d.Change = Change{By: identity.Name(ctx), At: at, Why: why}
		d.RevisionPending = true
		return nil
	}
}

func revisionOf(d Document) Revision {
	d = d.Clone()
	d.RevisionPending = false
	return Revision{DocumentID: d.ID, Version: d.Version, Change: d.Change, Doc: d}
}

// settle stores the revisions of marked documents and clears their marks
// (Settle, repair). A failure is logged, not returned: the mark stays, and
// the next write or the Settle job finishes it.
func (s *Service) settle(ctx context.Context, docs ...Document) {
	if s.noRevisions {
		return
	}
	var revs []Revision
	for _, d := range docs {
		if d.RevisionPending && !d.Purged() {
			revs = append(revs, revisionOf(d))
		}
	}
	if len(revs) == 0 {
		return
	}
	ctx = context.WithoutCancel(ctx)
	if err := s.store.PutRevisions(ctx, revs); err != nil {
		s.log.WarnContext(ctx, "revisions not stored yet; the next write or the settling job stores them", "error", err)
		return
	}
	for _, r := range revs {
		if err := s.store.SettleRevision(ctx, r.DocumentID, r.Version); err != nil {
			s.log.WarnContext(ctx, "revision stored, its mark not cleared; the settling job clears it", "document_id", r.DocumentID, "error", err)
		}
	}
	s.trim(ctx, revs...)
}

// trim applies the retention by count once the revisions are stored, with
// one deletion for all their documents.
func (s *Service) trim(ctx context.Context, revs ...Revision) {
	n := int64(s.retention.Count)
	if n <= 0 {
		return
	}
	upTo := map[string]int64{}
	for _, r := range revs {
		if r.Version > n && r.Version-n > upTo[r.DocumentID] {
			upTo[r.DocumentID] = r.Version - n
		}
	}
	if err := s.store.TrimRevisions(ctx, upTo); err != nil {
		s.log.WarnContext(ctx, "old revisions not trimmed; the next write trims them", "error", err)
	}
}

// repair returns the document id, its latest revision stored first if it
// is still only marked (a read of revisions sees every one).
func (s *Service) repair(ctx context.Context, id string) (Document, error) {
	d, err := s.store.Get(ctx, id)
	if err == nil && d.RevisionPending && !s.noRevisions {
		s.settle(ctx, d)
	}
	return d, err
}

// settleAfter is how long a document may stay marked before the Settle
// job stores its revision: its writer normally does it at once.
const settleAfter = 5 * time.Second

// Settle stores the revisions of documents whose writer died between the
// document write and the revision write, at most limit a call, and applies
// the retention by age. Idempotent, safe on several replicas.
func (s *Service) Settle(ctx context.Context, limit int) (int, error) {
	docs, err := s.store.Unsettled(ctx, s.now().Add(-settleAfter), limit)
	if err != nil {
		return 0, err
	}
	s.settle(ctx, docs...)
	if now := s.now(); s.retention.Age > 0 && now.Sub(time.Unix(0, s.expiredAt.Load())) >= expireEvery {
		if _, err := s.store.ExpireRevisions(ctx, now.Add(-s.retention.Age)); err != nil {
			return len(docs), err
		}
		s.expiredAt.Store(now.UnixNano())
	}
	return len(docs), nil
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

// SetRetention sets how many revisions are kept (default: all).
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
	d, err := s.repair(ctx, id)
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
	if _, err := s.repair(ctx, id); err != nil {
		return Revision{}, err
	}
	return s.store.GetRevision(ctx, id, version)
}

// Get returns a document as the back office sees it (both versions).
func (s *Service) Get(ctx context.Context, id string) (Document, error) { return s.store.Get(ctx, id) }
