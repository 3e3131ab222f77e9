package document

import (
	"context"
	"errors"
	"time"

	"github.com/doclib/libs/idempotency"
)

// Key is the Idempotency-Key a create ran under, stored with the document
// it made from its first write on: no two documents hold one key (the
// store makes sure), so a retry whose first attempt was applied without
// the service knowing (the database answered too late) finds that
// document instead of making another.
type Key struct {
	// ID is the caller's scoped key.
	ID string
	// Fingerprint identifies the request that made the document.
	Fingerprint string
	// ExpiresAt is when the key is forgotten: past it, it no longer stands
	// in the way of a new create.
	ExpiresAt time.Time
}

var (
	// ErrKeyTaken is a store's answer to a create under a key another
	// document holds.
	ErrKeyTaken = errors.New("idempotency key held by another document")
	// ErrKeyReused is a create under a key that made a document from
	// another request.
	ErrKeyReused = errors.New("idempotency key used for another request")
	// ErrKeyPending is a create under a key whose first attempt's
	// document is still being written, or was left half-made by a write
	// whose outcome is unknown: the retry must come back later (the
	// half-made one is removed as a stale hold, or completed).
	ErrKeyPending = errors.New("a create with this idempotency key is still being written")
)

// KeyDeletedError is a create whose key made a document, since deleted
// (in the trash) or purged: the retry does not make it again, nor answer
// the deleted one as made.
type KeyDeletedError struct {
	ID     string // the document the key made
	Purged bool   // gone for good; else in the trash, restorable
}

func (e *KeyDeletedError) Error() string {
	return "the document '" + e.ID + "' this idempotency key created has since been deleted"
}

// createKeyed is Create under the request's key: a document made by an
// earlier attempt with the same request is the answer (KeyDeletedError if
// it was deleted since), one made by another request is ErrKeyReused, an
// expired key is taken from its document and the create runs.
func (s *Service) createKeyed(ctx context.Context, c *idempotency.Claim, adds Refs, fn func(*Document) error) (Document, error) {
	key := Key{ID: c.ID, Fingerprint: c.Fingerprint, ExpiresAt: c.ExpiresAt}
	for range 3 {
		d, err := s.store.CreateKeyed(ctx, NewID(), key, adds, fn)
		if !errors.Is(err, ErrKeyTaken) {
			return d, err
		}
		held, hk, creating, err := s.store.Keyed(ctx, key.ID)
		switch {
		case errors.Is(err, ErrNotFound):
			// Let go meanwhile (expired and taken off): create again.
		case err != nil:
			return Document{}, err
		case !s.now().Before(hk.ExpiresAt):
			// The key expired: it no longer stands in the way.
			if err := s.store.DropKey(ctx, key.ID, held.Seq, s.now()); err != nil {
				return Document{}, err
			}
		default:
			return heldAnswer(held, hk, key, creating)
		}
	}
	return Document{}, ErrKeyPending
}

// heldAnswer is the answer of a create whose live key hk holds the
// document held.
func heldAnswer(held Document, hk, key Key, creating bool) (Document, error) {
	switch {
	case hk.Fingerprint != key.Fingerprint:
		return Document{}, ErrKeyReused
	case creating:
		return Document{}, ErrKeyPending
	case held.Purged() || held.IsDeleted:
		return Document{}, &KeyDeletedError{ID: held.ID, Purged: held.Purged()}
	}
	return held, nil
}
