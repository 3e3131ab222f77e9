package rendition

import (
	"errors"
	"sync"
	"time"
)

// Defaults of the failure record.
const (
	// FailureTTL is how long a PDF that could not be read (its text, or a
	// cover at one spec) is answered 422 from memory before it is tried
	// again.
	FailureTTL = 10 * time.Minute
	// maxFailures bounds the failures remembered.
	maxFailures = 10_000
)

// failures remembers what could not be made (a NotRenderableError), by
// rendition key, for FailureTTL: a PDF that times out is not run again on
// every request. Bounded: when full, expired records go first, then the
// one closest to expiry.
type failures struct {
	mu   sync.Mutex
	recs map[string]failed
	now  func() time.Time
}

type failed struct {
	err   *NotRenderableError
	until time.Time
}

func newFailures(now func() time.Time) *failures {
	return &failures{recs: map[string]failed{}, now: now}
}

// get returns the failure recorded for key, if still current.
func (f *failures) get(key string) (*NotRenderableError, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.recs[key]
	if !ok {
		return nil, false
	}
	if !f.now().Before(r.until) {
		delete(f.recs, key)
		return nil, false
	}
	return r.err, true
}

// record remembers err for key when it says the file cannot be read.
func (f *failures) record(key string, err error) {
	var nr *NotRenderableError
	if !errors.As(err, &nr) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if len(f.recs) >= maxFailures {
		f.evict(now)
	}
	f.recs[key] = failed{err: nr, until: now.Add(FailureTTL)}
}

// evict drops the expired records, or else the one closest to expiry.
func (f *failures) evict(now time.Time) {
	oldest, at := "", time.Time{}
	for k, r := range f.recs {
		if !now.Before(r.until) {
			delete(f.recs, k)
			continue
		}
		if oldest == "" || r.until.Before(at) {
			oldest, at = k, r.until
		}
	}
	if len(f.recs) >= maxFailures {
		delete(f.recs, oldest)
	}
}
