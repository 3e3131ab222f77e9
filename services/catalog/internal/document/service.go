package document

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"time"
)

// Service is the catalog's use cases.
type Service struct {
	store Store
	refs  References
	now   func() time.Time
}

// NewService returns a Service.
func NewService(store Store, refs References) *Service {
	return &Service{store: store, refs: refs, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// NewID returns a server-made document id: 128 random bits, URL-safe.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Create validates in and stores a new document.
func (s *Service) Create(ctx context.Context, in Input) (Document, error) {
	d, err := check(ctx, s.refs, SanitizeHTML, in)
	if err != nil {
		return Document{}, err
	}
	d.ID = NewID()
	d.CreatedAt = s.now()
	d.UpdatedAt = d.CreatedAt
	if err := s.store.Insert(ctx, d); err != nil {
		return Document{}, err
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
		d, err := check(ctx, s.refs, SanitizeHTML, in)
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
		return d, nil
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
	return s.store.Restore(ctx, id, s.now())
}

// MediaUsers returns the live documents that use a media.
func (s *Service) MediaUsers(ctx context.Context, mediaID string) ([]string, error) {
	return s.store.MediaUsers(ctx, mediaID)
}
