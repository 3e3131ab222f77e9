package rendering

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Cache keeps what a service renders from its store (a Rendering, or a set
// of them) and renews it when the store's revision moves: a number the
// store changes after every write (mongox.Revision). Reading it costs one
// lookup of that number, at most once per maxLag for each reader, instead
// of a read of the whole collection.
//
// Freshness: Invalidate (a write through this replica) makes the next Get
// load again; writes through other replicas are seen by a Get within its
// maxLag, by comparing the revision; MaxAge bounds staleness should a
// revision bump ever be lost (a crash between a write and its bump).
//
// While one caller renews, the others are served the current value without
// waiting (stale-while-revalidate), unless they asked for maxLag 0 or a
// write through this replica invalidated it: a back-office author reads
// their own writes at once, through any replica.
type Cache[T any] struct {
	// Load builds the value from the store.
	Load func(ctx context.Context) (T, error)
	// Revision returns the store's revision.
	Revision func(ctx context.Context) (int64, error)
	// MaxAge re-loads a value even though the revision did not move; 0
	// means never.
	MaxAge time.Duration

	cur     atomic.Pointer[snapshot[T]]
	renew   sync.Mutex
	invalid atomic.Bool
	// failed is the last renewal that failed: callers that waited for it
	// share its error instead of each trying again in turn (with the store
	// down, the n-th waiting caller would wait n timeouts).
	failed atomic.Pointer[failure]
}

type failure struct {
	began time.Time
	err   error
}

// snapshot is one loaded value; never changed once stored.
type snapshot[T any] struct {
	val     T
	rev     int64
	made    time.Time // when the revision it was loaded at was read
	checked time.Time // when the revision was last read and found unchanged
}

// MaxLag is the maxLag for a Get serving req: lag, or 0 when req asks for
// an answer revalidated with the origin (Cache-Control: no-cache or
// max-age=0, RFC 9111 §5.2.1). The gateway asks so when it revalidates
// after a back-office write through it, so the author reads the write at
// once even from a replica that did not take it.
func MaxLag(req *http.Request, lag time.Duration) time.Duration {
	for _, v := range req.Header.Values("Cache-Control") {
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			if d == "no-cache" || d == "max-age=0" {
				return 0
			}
		}
	}
	return lag
}

// Invalidate makes the next Get compare the revision and load again, and
// makes every Get wait for that.
func (c *Cache[T]) Invalidate() { c.invalid.Store(true) }

// Get returns the value, checking the revision when the last check began
// more than maxLag before this call (0: a check that begins after this
// call). Errors are those of Revision and Load.
func (c *Cache[T]) Get(ctx context.Context, maxLag time.Duration) (T, error) {
	arrived := time.Now()
	s := c.cur.Load()
	if c.fresh(s, arrived, maxLag) {
		return s.val, nil
	}
	if !c.renew.TryLock() {
		if s != nil && maxLag > 0 && !c.invalid.Load() {
			return s.val, nil // someone is renewing it
		}
		if err := lock(ctx, &c.renew); err != nil {
			var zero T
			return zero, err // the caller's deadline, or its client gone
		}
	}
	defer c.renew.Unlock()
	if s = c.cur.Load(); c.fresh(s, arrived, maxLag) {
		return s.val, nil // renewed while this call waited
	}
	if f := c.failed.Load(); f != nil && !f.began.Before(arrived) {
		var zero T
		return zero, f.err // a renewal begun after this call arrived just failed
	}
	// Cleared before the revision is read: an Invalidate from now on is a
	// write this check may not see, and leaves the next Get due again.
	invalid := c.invalid.Swap(false)
	began := time.Now()
	val, err := c.renewLocked(ctx, s, invalid)
	if err != nil && invalid {
		c.invalid.Store(true)
	}
	if err != nil && ctx.Err() == nil { // the store's failure, not this caller's end
		c.failed.Store(&failure{began: began, err: err})
	}
	return val, err
}

// lock takes mu, or gives up when ctx ends (the lock is then released as
// soon as it is obtained).
func lock(ctx context.Context, mu *sync.Mutex) error {
	got := make(chan struct{})
	go func() {
		mu.Lock()
		close(got)
	}()
	select {
	case <-got:
		return nil
	case <-ctx.Done():
		go func() {
			<-got
			mu.Unlock()
		}()
		return ctx.Err()
	}
}

// renewLocked compares the revision with s's and loads a new value when it
// moved (or s is missing, invalid or too old). The caller holds renew.
func (c *Cache[T]) renewLocked(ctx context.Context, s *snapshot[T], invalid bool) (T, error) {
	start := time.Now()
	rev, err := c.Revision(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	if s != nil && !invalid && rev == s.rev && !c.tooOld(s, start) {
		next := *s
		next.checked = start
		c.cur.Store(&next)
		return s.val, nil
	}
	val, err := c.Load(ctx)
	if err != nil {
		return val, err
	}
	c.cur.Store(&snapshot[T]{val: val, rev: rev, made: start, checked: start})
	return val, nil
}

func (c *Cache[T]) fresh(s *snapshot[T], arrived time.Time, maxLag time.Duration) bool {
	return s != nil && !c.invalid.Load() && !s.checked.Before(arrived.Add(-maxLag)) && !c.tooOld(s, arrived)
}

func (c *Cache[T]) tooOld(s *snapshot[T], now time.Time) bool {
	return c.MaxAge > 0 && now.Sub(s.made) >= c.MaxAge
}
