package document

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Service is the catalog's use cases.
type Service struct {
	store Store
	refs  References
	log   *slog.Logger
	now   func() time.Time
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

// Create validates in and stores a new document.
func (s *Service) Create(ctx context.Context, in Input) (Document, error) {
	d, err := s.checked(ctx, in)
	if err != nil {
		return Document{}, err
	}
	d.ID = NewID()
	d.CreatedAt = s.now()
	d.UpdatedAt = d.CreatedAt
	if err := s.store.Insert(ctx, d); err != nil {
		return Document{}, err
	}
	return s.settleNow(ctx, d, d.UpdatedAt), nil
}

// checked runs check and stamps when the references were checked: the
// time before the lookups, or the creation of the newest tag the check saw
// if that is later (taxonomy's clock may be ahead, or the tag was created
// while the check ran). A tag the check saw then never counts as created
// after it; a tag id created anew later always does.
func (s *Service) checked(ctx context.Context, in Input) (Document, error) {
	before := s.now()
	d, err := check(ctx, s.refs, SanitizeHTML, in)
	if err != nil {
		return Document{}, err
	}
	if d.RefsAt.Before(before) {
		d.RefsAt = before
	}
	return d, nil
}

// Update replaces a live document's fields with the full variant body in;
// its type cannot change.
func (s *Service) Update(ctx context.Context, id string, in Input) (Document, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.store.Get(ctx, id)
		if err != nil {
			return Document{}, err
		}
		if cur.IsDeleted {
			return Document{}, ErrDeleted
		}
		// A missing or unknown type is an ordinary validation error (check
		// reports it); only a valid type other than the stored one is
		// type_immutable.
		if t := Type(in.Type); t.Valid() && t != cur.Type {
			return Document{}, ErrTypeImmutable
		}
		d, err := s.checked(ctx, in)
		if err != nil {
			return Document{}, err
		}
		d.ID, d.CreatedAt, d.UpdatedAt = cur.ID, cur.CreatedAt, s.now()
		if !d.UpdatedAt.After(cur.UpdatedAt) {
			d.UpdatedAt = cur.UpdatedAt.Add(time.Millisecond)
		}
		err = s.store.Replace(ctx, d, cur.UpdatedAt)
		if errors.Is(err, ErrConflict) && attempt < 3 {
			continue // someone else wrote in between: validate again on fresh data
		}
		if err != nil {
			return Document{}, err
		}
		return s.settleNow(ctx, d, d.UpdatedAt), nil
	}
}

// Get returns a document, deleted or not.
func (s *Service) Get(ctx context.Context, id string) (Document, error) { return s.store.Get(ctx, id) }

// GetLive returns a document that is not deleted (the public side).
func (s *Service) GetLive(ctx context.Context, id string) (Document, error) {
	d, err := s.store.Get(ctx, id)
	if err != nil {
		return Document{}, err
	}
	if d.IsDeleted {
		return Document{}, ErrNotFound
	}
	return d, nil
}

// List returns summaries newest first; the public side never sees deleted ones.
func (s *Service) List(ctx context.Context, withDeleted bool) ([]Summary, error) {
	return s.store.List(ctx, withDeleted)
}

// Delete soft-deletes a document; deleting a deleted document is a no-op.
// It reports whether this call deleted it.
func (s *Service) Delete(ctx context.Context, id string) (bool, error) {
	return s.store.SoftDelete(ctx, id, s.now())
}

// Restore brings a deleted document back (a no-op on a live one).
func (s *Service) Restore(ctx context.Context, id string) (Document, error) {
	at := s.now()
	d, err := s.store.Restore(ctx, id, at)
	if err != nil {
		return Document{}, err
	}
	return s.settleNow(ctx, d, at), nil
}

// settle checks d's references again after a write and drops those that
// were deleted in between; it returns d as stored.
//
// check asks taxonomy and media before the write. A tag or media deleted
// after that question, whose deletion event the catalog applied before the
// write landed, would stay on the document for good. Asking again after the
// write closes the gap: a reference still there now was stored before its
// deletion, so the deletion's event will find it. A media being deleted is
// kept: its deletion may yet find it in use and stop, or its event drops it.
//
// The write was marked (at), and settle clears the mark. When a lookup or
// the store fails the mark stays, and SettleUnsettled tries again later:
// a crash or an outage between the write and here loses nothing.
func (s *Service) settle(ctx context.Context, d Document, at time.Time) (Document, error) {
	goneTags, goneMedia, err := s.gone(ctx, d)
	if err != nil {
		return d, err
	}
	if err := s.store.Settle(ctx, Mark{DocumentID: d.ID, At: at}, d.RefsAt, goneTags, goneMedia); err != nil {
		return d, err
	}
	if len(goneTags)+len(goneMedia) == 0 {
		return d, nil
	}
	s.log.WarnContext(ctx, "references deleted while the document was being written were dropped",
		"document_id", d.ID, "tags", goneTags, "media", goneMedia)
	d.TagsIDs = slices.DeleteFunc(slices.Clone(d.TagsIDs), func(id string) bool { return slices.Contains(goneTags, id) })
	d.ImagesIDs = slices.DeleteFunc(slices.Clone(d.ImagesIDs), func(id string) bool { return slices.Contains(goneMedia, id) })
	if d.File != nil && slices.Contains(goneMedia, d.File.ID) {
		d.File = nil
	}
	return d, nil
}

// settleNow settles a document just written; a failure is logged and left
// to SettleUnsettled (the write itself succeeded).
func (s *Service) settleNow(ctx context.Context, d Document, at time.Time) Document {
	out, err := s.settle(ctx, d, at)
	if err != nil {
		s.log.WarnContext(ctx, "references not checked again after the write; retried in the background",
			"document_id", d.ID, "error", err)
	}
	return out
}

// gone returns d's tags and media that no longer exist. A tag id created
// after d's references were checked names a new tag, not d's: gone too.
func (s *Service) gone(ctx context.Context, d Document) (tags, media []string, err error) {
	if len(d.TagsIDs) > 0 {
		found, err := s.refs.Tags(ctx, d.TagsIDs)
		if err != nil {
			return nil, nil, err
		}
		for _, id := range d.TagsIDs {
			created, ok := found[id]
			if !ok || (!d.RefsAt.IsZero() && created.After(d.RefsAt)) {
				tags = append(tags, id)
			}
		}
	}
	ids := slices.Clone(d.ImagesIDs)
	if d.File != nil {
		ids = append(ids, d.File.ID)
	}
	if len(ids) > 0 {
		found, err := s.refs.Medias(ctx, ids)
		if err != nil {
			return nil, nil, err
		}
		for _, id := range ids {
			if _, ok := found[id]; !ok {
				media = append(media, id)
			}
		}
	}
	return tags, media, nil
}

// orphanMarkAge is how old a mark without its document must be before it
// is cleared: a write may be marked well before it lands.
const orphanMarkAge = 10 * time.Minute

// SettleUnsettled settles up to 100 marks older than age: writes whose own
// settle failed or never ran. It returns how many it settled and the first
// failure.
func (s *Service) SettleUnsettled(ctx context.Context, age time.Duration) (int, error) {
	marks, err := s.store.Unsettled(ctx, s.now().Add(-age), 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, m := range marks {
		d, err := s.store.Get(ctx, m.DocumentID)
		switch {
		case errors.Is(err, ErrNotFound):
			// The write never landed (a failed insert, a restore of an
			// unknown id), or has not yet: an old mark goes, a young one
			// waits.
			err = nil
			if m.At.Before(s.now().Add(-orphanMarkAge)) {
				err = s.store.Settle(ctx, m, time.Time{}, nil, nil)
			}
		case err == nil:
			if _, err = s.settle(ctx, d, m.At); err == nil {
				n++
			}
		}
		if err != nil {
			return n, fmt.Errorf("settle document %s: %w", m.DocumentID, err)
		}
	}
	return n, nil
}

// MediaUsers returns the live documents that use a media.
func (s *Service) MediaUsers(ctx context.Context, mediaID string) ([]string, error) {
	return s.store.MediaUsers(ctx, mediaID)
}
