package document

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/identity"
)

// Service is the catalog's use cases. Every change to a document goes
// through the Store's one write path, with the rules in the closure.
type Service struct {
	store Store
	refs  References
	log   *slog.Logger
	now   func() time.Time
	// retention bounds the revisions kept (editorial.go); zero keeps all.
	retention Retention
	// noRevisions: the benchmark's baseline (export_test.go), no revision
	// kept.
	noRevisions bool
	// expiredAt is when ExpireRevisions last applied the retention by age
	// (unix nanoseconds): a pass reads every revision older than the age,
	// so it runs once per expireEvery.
	expiredAt atomic.Int64
}

// NewService returns a Service.
func NewService(store Store, refs References, log *slog.Logger) *Service {
	return &Service{store: store, refs: refs, log: log, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// NewID returns a server-made document id: 128 random bits, URL-safe.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// check validates in and checks the references and pins it makes, for the
// document self ("" for a new one) whose pins are stored (related.go), and
// returns the document fields it sets. Every failing field is reported at
// once.
func (s *Service) check(ctx context.Context, in Input, self string, stored []string, draft bool) (Document, schedule, error) {
	d, errs := validate(ctx, in)
	sc := checkSchedule(in, draft, s.now(), &errs)
	if err := checkRefs(ctx, s.refs, &d, &errs); err != nil {
		return Document{}, sc, err
	}
	if err := checkPins(ctx, s.store, &d, stored, self, &errs); err != nil {
		return Document{}, sc, err
	}
	if err := errs.Err(); err != nil {
		return Document{}, sc, err
	}
	return d, sc, nil
}

// Create validates in and stores a new document.
func (s *Service) Create(ctx context.Context, in Input) (Document, error) {
	draft := drafting(in, nil)
	if _, errs := validate(ctx, in); len(errs) > 0 {
		// A body wrong in itself writes nothing; its references are asked
		// about too, so that one answer names every failing field.
		_, _, err := s.check(ctx, in, "", nil, draft)
		return Document{}, err
	}
	fn := s.write(ctx, WhyCreate, s.creating(ctx, in, draft))
	return s.store.Create(ctx, NewID(), in.adds(), fn)
}

// creating makes a new document from in.
func (s *Service) creating(ctx context.Context, in Input, draft bool) func(*Document) error {
	return func(nd *Document) error {
		checked, sc, err := s.check(ctx, in, "", nil, draft)
		if err != nil {
			return err
		}
		checked.ID = nd.ID
		checked.CreatedAt = s.now()
		checked.UpdatedAt = checked.CreatedAt
		checked.CreatedBy = identity.Name(ctx)
		checked.UpdatedBy = checked.CreatedBy
		checked.Status, checked.PublishAt, checked.UnpublishAt = Published, sc.publishAt, sc.unpublishAt
		if draft {
			checked.Status = Draft
		} else {
			checked.PublishedAt = checked.CreatedAt
		}
		*nd = checked
		return nil
	}
}

// Update replaces a live document's fields with the full variant body in;
// its type cannot change.
func (s *Service) Update(ctx context.Context, id string, in Input) (Document, error) {
	d, err := s.store.Update(ctx, id, in.adds(), s.write(ctx, WhyUpdate, func(d *Document) error {
		if d.IsDeleted {
			return ErrDeleted
		}
		// A missing or unknown type is an ordinary validation error (check
		// reports it); only a valid type other than the stored one is
		// type_immutable.
		if t := Type(in.Type); t.Valid() && t != d.Type {
			return ErrTypeImmutable
		}
		checked, sc, err := s.check(ctx, in, d.ID, storedPins(d), drafting(in, d))
		if err != nil {
			return err
		}
		land(d, in, checked, sc)
		d.UpdatedAt, d.UpdatedBy = s.after(d.UpdatedAt), identity.Name(ctx)
		return nil
	}))
	return d, err
}

// after returns now, or just after prev if the clock has not passed it
// (updatedAt only moves forward).
func (s *Service) after(prev time.Time) time.Time {
	now := s.now()
	if !now.After(prev) {
		return prev.Add(time.Millisecond)
	}
	return now
}

// Delete puts a document in the trash; deleting a deleted document is a
// no-op. It returns the document and whether this call deleted it.
func (s *Service) Delete(ctx context.Context, id string) (Document, bool, error) {
	deleted := false
	d, err := s.store.Update(ctx, id, Refs{}, s.write(ctx, WhyDelete, func(d *Document) error {
		if d.IsDeleted {
			return ErrUnchanged
		}
		d.IsDeleted, deleted = true, true
		d.UpdatedAt, d.UpdatedBy = s.after(d.UpdatedAt), identity.Name(ctx)
		d.DeletedAt, d.DeletedBy = d.UpdatedAt, d.UpdatedBy
		return nil
	}))
	return d, deleted, err
}

// Restore brings a document back from the trash (a no-op on a live one).
// Media gone or being deleted meanwhile are dropped (refs.go). A
// publication whose time passed in the trash is cleared, never applied at
// once; an unpublication whose time passed is applied (it is restored a
// draft); either is returned.
func (s *Service) Restore(ctx context.Context, id string) (Document, Overdue, error) {
	var overdue Overdue
	d, err := s.store.Update(ctx, id, Refs{}, s.write(ctx, WhyRestore, func(d *Document) error {
		if !d.IsDeleted {
			return ErrUnchanged
		}
		dropped, err := dropUnusableMedia(ctx, s.refs, d)
		if err != nil {
			return err
		}
		if len(dropped) > 0 {
			s.log.WarnContext(ctx, "media gone or being deleted were dropped from the restored document",
				"document_id", d.ID, "media", dropped)
		}
		d.IsDeleted, d.DeletedAt, d.DeletedBy = false, time.Time{}, ""
		d.UpdatedAt, d.UpdatedBy = s.after(d.UpdatedAt), identity.Name(ctx)
		overdue = clearOverdue(d, s.now())
		return nil
	}))
	return d, overdue, err
}

// TagsDeleted applies the deletion of tags (their events) to every
// document, deleted ones included, and returns the documents it changed.
// Taxonomy is asked whether an id was created anew since (refs.go) once
// the store raised the tags' guards and read the documents naming them,
// so that a tag created anew, and a document written against it, before
// that are seen as such.
func (s *Service) TagsDeleted(ctx context.Context, ids []string) ([]Document, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var live map[string]time.Time
	// One change time per round for every document: the store writes the
	// documents that only lose the same tags with one update. The time is
	// the round's, taken once it read its documents (look runs then).
	var at time.Time
	look := func(ctx context.Context) error {
		at = s.now()
		var err error
		live, err = s.liveAgain(ctx, ids)
		return err
	}
	return s.store.UpdateNaming(ctx, Refs{Tags: ids}, look, s.record(ctx, whyEvent+events.TagDeleted, func() time.Time { return at }, func(d *Document) error {
		dropped := dropDeletedTags(d, ids, live)
		if d.Draft != nil && dropDeletedTags(d.Draft, ids, live) {
			dropped = true
		}
		if !dropped {
			return ErrUnchanged
		}
		return nil
	}))
}

// liveAgain returns which of the deleted tags ids exist again, created
// anew since, with their creation time.
func (s *Service) liveAgain(ctx context.Context, ids []string) (map[string]time.Time, error) {
	live, err := s.refs.Tags(ctx, ids)
	if err != nil {
		return nil, err
	}
	for id, since := range live {
		if since.IsZero() {
			// A taxonomy older than this catalog: wait for its upgrade
			// rather than guess which documents named the old tag.
			return nil, &UnavailableError{Service: "taxonomy service", Err: fmt.Errorf("it did not say when tag %s was created", id)}
		}
		s.log.InfoContext(ctx, "tag id created anew since its deletion: only documents not checked against the new tag lose it",
			"tag_id", id, "created_at", since)
	}
	return live, nil
}

// MediaDeleted applies the deletion of a media (its event): documents that
// still name it drop it. It returns the documents it changed and, of
// those, the ids of the live ones, which should not have been possible
// (refs.go).
func (s *Service) MediaDeleted(ctx context.Context, mediaID string) (changed []Document, live []string, err error) {
	naming, err := s.store.Naming(ctx, Refs{Media: []string{mediaID}})
	if err != nil {
		return nil, nil, err
	}
	changed, err = s.store.UpdateEach(ctx, naming, s.write(ctx, whyEvent+events.MediaDeleted, func(d *Document) error {
		dropped := dropMedia(d, []string{mediaID})
		if d.Draft != nil && dropMedia(d.Draft, []string{mediaID}) {
			dropped = true
		}
		if !dropped {
			return ErrUnchanged
		}
		return nil
	}))
	for _, d := range changed {
		if !d.IsDeleted {
			live = append(live, d.ID)
		}
	}
	return changed, live, err
}

// PurgeTrash purges the documents deleted before the given time: they are
// gone for good but for a tombstone, and their purge is announced
// (library.catalog.document.purged); documents that pinned them drop the
// pin (related.go). It returns how many it purged, at most limit a call.
func (s *Service) PurgeTrash(ctx context.Context, before time.Time, limit int) (int, error) {
	ids, err := s.store.Trashed(ctx, before, limit)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	purged, err := s.store.UpdateEach(ctx, ids, func(d *Document) error {
		if !d.IsDeleted || d.Purged() || !d.DeletedAt.Before(before) {
			return ErrUnchanged // restored, or purged, meanwhile
		}
		*d = Document{ID: d.ID, Type: d.Type, IsDeleted: true, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
			DeletedAt: d.DeletedAt, DeletedSeq: d.DeletedSeq, PurgedAt: s.now()}
		return nil
	})
	if err != nil || len(purged) == 0 {
		return len(purged), err
	}
	gone := make([]string, len(purged))
	for i, d := range purged {
		gone[i] = d.ID
	}
	// A pin is nobody's change, as a tag deletion is: UpdatedAt stays.
	pinning, err := s.store.Pinning(ctx, gone)
	if err != nil {
		return len(purged), err
	}
	_, err = s.store.UpdateEach(ctx, pinning, s.write(ctx, whyEvent+events.DocumentPurged, func(d *Document) error {
		dropped := dropPins(d, gone)
		if d.Draft != nil && dropPins(d.Draft, gone) {
			dropped = true
		}
		if !dropped {
			return ErrUnchanged
		}
		return nil
	}))
	return len(purged), err
}

// MediaUsers returns the live documents that use a media, and those a
// write in flight may make use it (refs.go).
func (s *Service) MediaUsers(ctx context.Context, mediaID string) ([]string, error) {
	return s.store.MediaUsers(ctx, mediaID)
}

// IsUnavailable reports whether err means a service or store the catalog
// depends on did not answer, as opposed to a refusal.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// storedPins are the pins a document already has, live and pending: a
// body sent back with them is not adding them (related.go), whichever
// version it edits.
func storedPins(d *Document) []string {
	if d.Draft == nil {
		return d.RelatedIDs
	}
	return append(slices.Clone(d.RelatedIDs), d.Draft.RelatedIDs...)
}
