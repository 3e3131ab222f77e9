// Package listing caches a rendered listing (the JSON bytes of every
// document) per catalog replica, so the listing routes cost one memory copy
// instead of a read of the whole collection. Freshness: a write through this
// replica invalidates at once; writes through other replicas are seen
// within CheckEvery, by comparing the store's revision counter; MaxAge
// bounds staleness should a revision bump ever be lost.
package listing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"time"
)

// Entry is one rendering of the listing.
type Entry struct {
	Body []byte
	ETag string // strong, quoted
	rev  int64
	made time.Time
	seen atomic.Int64 // unix nanos of the last revision check
}

// Cache holds the latest Entry and renews it when the revision moves.
type Cache struct {
	Render     func(ctx context.Context) ([]byte, error)
	Revision   func(ctx context.Context) (int64, error)
	CheckEvery time.Duration // 0: compare the revision on every Get
	MaxAge     time.Duration

	cur     atomic.Pointer[Entry]
	renew   sync.Mutex
	invalid atomic.Bool
}

// Invalidate makes the next Get render again.
func (c *Cache) Invalidate() { c.invalid.Store(true) }

// Get returns a fresh enough Entry. While one caller renews it, the others
// are served the current entry without waiting (unless a write through
// this replica invalidated it), so requests never queue behind the revision
// lookup or a re-read.
func (c *Cache) Get(ctx context.Context) (*Entry, error) {
	now := time.Now()
	e := c.cur.Load()
	if e != nil && c.fresh(e, now) {
		return e, nil
	}
	if !c.renew.TryLock() {
		if e != nil && !c.invalid.Load() {
			// Someone is renewing it. Past MaxAge too: the re-read after
			// MaxAge is a safety net, and at 10,000 documents it takes
			// seconds, which every request would otherwise wait.
			return e, nil
		}
		c.renew.Lock()
	}
	defer c.renew.Unlock()
	now = time.Now()
	e = c.cur.Load()
	if e != nil && c.fresh(e, now) {
		return e, nil // renewed while we waited
	}
	rev, err := c.Revision(ctx)
	if err != nil {
		return nil, err
	}
	if e != nil && !c.invalid.Load() && rev == e.rev && now.Sub(e.made) < c.MaxAge {
		e.seen.Store(now.UnixNano())
		return e, nil
	}
	c.invalid.Store(false)
	body, err := c.Render(ctx)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	ne := &Entry{Body: body, ETag: `"` + hex.EncodeToString(sum[:16]) + `"`, rev: rev, made: now}
	ne.seen.Store(now.UnixNano())
	c.cur.Store(ne)
	return ne, nil
}

func (c *Cache) fresh(e *Entry, now time.Time) bool {
	return c.CheckEvery > 0 && !c.invalid.Load() &&
		now.Sub(time.Unix(0, e.seen.Load())) < c.CheckEvery && now.Sub(e.made) < c.MaxAge
}
