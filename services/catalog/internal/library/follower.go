// Package library keeps every document of the catalog in memory, one copy
// per replica, in step with the store by following its change sequence
// (see document/mongostore), and answers the reads from it: the listings,
// a detail with its related documents (snapshot.go), and the sync feed
// (sync.go). The library is small by design, so a replica holds all of it:
// a read costs no database round trip.
//
// The files, each opening with the rule it keeps: snapshot.go (what a read
// sees), follower.go (how it is kept fresh), puts.go (read-your-writes),
// sync.go (cursors and pages), categories.go (the tag categories).
package library

// The rule this file keeps: one follower per replica does every read of
// the store, one look at a time, and publishes what it read as a new
// snapshot (puts.go merges it). Reads never read the store: a public read
// takes the current snapshot, and wakes the follower if it is older than
// the read allows; a read that must be fresh (the back-office's, or one
// asking for a revalidated answer) wakes it and waits for the snapshot of
// a look begun after it arrived, or that look's error.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// Source is how the library follows the store.
type Source interface {
	// Counter is the highest seq handed out. Its increment commits with
	// the write it numbers, so every write up to it is visible to reads
	// made after the call: it is the stable point of what they read.
	Counter(ctx context.Context) (int64, error)
	// Horizon is the highest DeletedSeq of the purged documents gone for
	// good.
	Horizon(ctx context.Context) (int64, error)
	// Changes returns up to limit documents after (afterSeq, afterID) in
	// (seq, id) order ("" : every document at afterSeq was read).
	Changes(ctx context.Context, afterSeq int64, afterID string, limit int) ([]document.Document, error)
	// Present returns which of ids are documents not purged.
	Present(ctx context.Context, ids []string) ([]string, error)
}

const (
	// pageSize is how many documents one read of the changes asks for: the
	// whole library at the size it is designed for, so that a replica
	// starting cold reads it in one query (bench/results/database.md).
	pageSize = 10000
	// idleEvery is how often the follower looks at the store while no
	// read wakes it.
	idleEvery = time.Second
	// lookBudget bounds one look, however long a replica starting cold,
	// or far behind on a slow database, takes to read what changed.
	lookBudget = time.Minute
)

// Library is one replica's copy of the catalog.
type Library struct {
	src       Source
	log       *slog.Logger
	pageSize  int              // of a sync page: PageSize, smaller in tests
	pageBytes int              // of a sync page: PageBytes, smaller in tests
	now       func() time.Time // time.Now; tests step it
	wakeup    chan struct{}    // buffered: wakes the follower

	cur atomic.Pointer[Snapshot] // published under mu, read without it

	mu      sync.Mutex // guards what follows
	stop    context.CancelFunc
	begun   uint64        // looks begun
	failed  uint64        // the last look that failed,
	failure error         // and why
	ended   chan struct{} // closed when a look ends, then replaced
	puts    []document.Document
	tax     taxonomy

	settings settings // the public settings, for bundles (bundle.go)
}

// New returns an empty Library whose follower starts with the first read
// that needs the store. tags gives the tag categories (sync and the
// related documents' order).
func New(src Source, tags Taxonomy, log *slog.Logger) *Library {
	l := &Library{src: src, log: log, pageSize: PageSize, pageBytes: PageBytes, now: time.Now,
		wakeup: make(chan struct{}, 1), ended: make(chan struct{}), tax: taxonomy{src: tags}}
	l.cur.Store(newSnapshot(nil, 0, 0, 0, nil))
	return l
}

// Close stops the follower; the snapshot held is still served.
func (l *Library) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		l.stop()
	}
}

// Current returns the snapshot held now, however old.
func (l *Library) Current() *Snapshot { return l.cur.Load() }

// Get returns the current snapshot if it was read no longer than maxLag
// ago, or waits for one read after the call (maxLag 0, or nothing read
// yet). A snapshot older than maxLag is returned too, and the follower
// woken: public reads never wait for the store.
func (l *Library) Get(ctx context.Context, maxLag time.Duration) (*Snapshot, error) {
	if s := l.cur.Load(); s.loaded() && maxLag > 0 {
		if l.now().Sub(s.taken) >= maxLag {
			l.wake()
		}
		return s, nil
	}
	return l.fresh(ctx)
}

// fresh waits for the snapshot of a look begun after the call.
func (l *Library) fresh(ctx context.Context) (*Snapshot, error) {
	l.mu.Lock()
	if l.stop == nil {
		follow, stop := context.WithCancel(context.Background())
		l.stop = stop
		go l.follow(follow)
	}
	want := l.begun + 1 // the next look to begin
	for {
		if s := l.cur.Load(); s.look >= want {
			l.mu.Unlock()
			return s, nil
		}
		if l.failed >= want {
			err := l.failure
			l.mu.Unlock()
			return nil, err
		}
		ended := l.ended
		l.mu.Unlock()
		l.wake()
		select {
		case <-ended:
		case <-ctx.Done():
			return nil, ctx.Err() // the look goes on, for the reads after this one
		}
		l.mu.Lock()
	}
}

func (l *Library) wake() {
	select {
	case l.wakeup <- struct{}{}:
	default: // already woken
	}
}

// follow is the follower: a look whenever a read wakes it, and every
// idleEvery without.
func (l *Library) follow(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.wakeup:
		case <-time.After(idleEvery):
		}
		l.look(ctx)
	}
}

// look reads what changed since the snapshot held, publishes the new one
// (or records why it could not) and tells the reads waiting.
func (l *Library) look(ctx context.Context) {
	l.mu.Lock()
	l.begun++
	n, base := l.begun, l.cur.Load()
	l.mu.Unlock()
	taken := l.now()
	ctx, cancel := context.WithTimeout(ctx, lookBudget)
	defer cancel()
	read, err := l.lookFrom(ctx, base)

	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		if l.failed != n-1 {
			l.log.WarnContext(ctx, "the catalog's memory could not follow the store", "error", err)
		}
		l.failed, l.failure = n, err
	} else {
		l.publishRead(read, n, taken)
	}
	close(l.ended)
	l.ended = make(chan struct{})
}

// lookFrom looks at the counter and reads the changes after s's stable
// point if it moved; nil when it did not.
func (l *Library) lookFrom(ctx context.Context, s *Snapshot) (*Snapshot, error) {
	c, err := l.src.Counter(ctx)
	if err != nil {
		return nil, err
	}
	if s.loaded() && c <= s.Stable {
		return nil, nil
	}
	return l.refresh(ctx, s, c)
}

// refresh reads every change after s's stable point, up to counter (read
// first: every write up to it is visible to the reads that follow).
// The horizon is read last: the sweep raises it before it removes a purged
// document, so a document the changes no longer hold is under the horizon
// read after them.
//
// A snapshot holds no live document whose deletion is at or below its
// stable point (sync.go rests on it). A document deleted at or below the
// stable point it was read from is held deleted, not live. So only a
// document deleted above it, then purged and removed for good before the
// horizon was read, can be held live wrongly. The horizon then is above
// that stable point, and every document is read again, from a counter
// read anew, after a pause that grows (purges in a row would otherwise
// make back-to-back reads of every document).
func (l *Library) refresh(ctx context.Context, s *Snapshot, counter int64) (*Snapshot, error) {
	base := s
	for reads := 1; ; reads++ {
		if reads > 1 {
			c, err := l.src.Counter(ctx)
			if err != nil {
				return nil, err
			}
			counter = c
		}
		changes, horizon, err := l.read(ctx, base.Stable)
		if err != nil {
			return nil, err
		}
		stable := counter
		from := base.Stable
		if len(base.docs) == 0 {
			from = stable // nothing held: only the changes can hold such a document
		}
		if horizon <= from {
			return l.apply(ctx, base, changes, max(s.Stable, stable), max(s.Counter, counter), max(s.Horizon, horizon))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("documents were purged while they were read, %d times in a row: %w", reads, context.Cause(ctx))
		case <-time.After(min(time.Duration(reads)*20*time.Millisecond, time.Second)):
		}
		base = newSnapshot(nil, 0, 0, 0, s.cats)
	}
}

// read returns every document changed after the stable point after, and
// then the horizon.
func (l *Library) read(ctx context.Context, after int64) (changes []document.Document, horizon int64, err error) {
	seq, id := after, ""
	for {
		page, err := l.src.Changes(ctx, seq, id, pageSize)
		if err != nil {
			return nil, 0, err
		}
		changes = append(changes, page...)
		if len(page) < pageSize {
			break
		}
		seq, id = page[len(page)-1].Seq, page[len(page)-1].ID
	}
	horizon, err = l.src.Horizon(ctx)
	return changes, horizon, err
}

// apply returns s with the changes read, and without the documents the
// horizon passed that are gone for good: those purged and removed between
// two looks were never seen as tombstones here, so the ones still held
// deleted under the horizon are asked about.
func (l *Library) apply(ctx context.Context, s *Snapshot, changes []document.Document, stable, counter, horizon int64) (*Snapshot, error) {
	next := s.with(changes, stable, counter, horizon, s.cats)
	if horizon <= s.Horizon {
		return next, nil
	}
	var ids []string
	for id, d := range next.docs {
		// A draft is held as removed (publicOf) but was never deleted: no
		// sweep removes it, so it is not asked about.
		if d.IsDeleted && !d.DeletedAt.IsZero() && d.DeletedSeq <= horizon {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return next, nil
	}
	present, err := l.src.Present(ctx, ids)
	if err != nil {
		return nil, err
	}
	gone := slices.DeleteFunc(ids, func(id string) bool { return slices.Contains(present, id) })
	if len(gone) == 0 {
		return next, nil
	}
	docs := make(map[string]*document.Document, len(next.docs))
	for id, d := range next.docs {
		docs[id] = d
	}
	for _, id := range gone {
		delete(docs, id)
	}
	return newSnapshot(docs, next.Stable, next.Counter, next.Horizon, next.cats), nil
}
