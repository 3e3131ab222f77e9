package library

// The rule this file keeps, the one merge rule: a snapshot holds each
// document at the highest seq it was read or put at, and a document put at
// or below a snapshot's stable point is dropped, since what that snapshot
// read covers it (as the store has it now, or gone for good: put back, a
// document purged and swept meanwhile would come back live here for good).
// A put is merged into every snapshot published until a look's read
// covers it, so a look that began before the put does not lose it.
// Snapshots are published here only, under the Library's mutex.

import (
	"slices"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// Put puts documents this replica just wrote into memory (a back-office
// write, or what an event changed), so that their author, and the public
// side of this replica, read them at once; the store's changes bring them
// to the others. It never waits for the follower's reads.
func (l *Library) Put(ds ...document.Document) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.cur.Load()
	ds = above(cur.Stable, ds)
	if len(ds) == 0 {
		return
	}
	l.puts = append(l.puts, ds...)
	l.cur.Store(merge(cur, ds, cur.cats))
}

// publishRead publishes what look n, begun at taken, read: the snapshot
// held's categories, and the puts its read does not cover. Under mu.
func (l *Library) publishRead(read *Snapshot, n uint64, taken time.Time) {
	cur := l.cur.Load()
	var next *Snapshot
	if read == nil { // nothing written since the stable point: cur is as fresh
		copied := *cur
		next = &copied
	} else {
		l.puts = above(read.Stable, l.puts)
		next = merge(read, l.puts, cur.cats)
	}
	next.look, next.taken = n, taken
	l.cur.Store(next)
}

// setCategories publishes a snapshot with new tag categories (the related
// documents' order depends on them). Under mu.
func (l *Library) setCategories(c *Categories) {
	cur := l.cur.Load()
	if cur.cats != nil && c != nil && cur.cats.Fingerprint == c.Fingerprint {
		return
	}
	l.cur.Store(cur.with(nil, cur.Stable, cur.Counter, cur.Horizon, c))
}

// merge returns s with the puts above its stable point, and cats.
func merge(s *Snapshot, puts []document.Document, cats *Categories) *Snapshot {
	puts = above(s.Stable, puts)
	counter := s.Counter
	for _, d := range puts {
		counter = max(counter, d.Seq)
	}
	return s.with(puts, s.Stable, counter, s.Horizon, cats)
}

// above returns the documents of ds above stable, in a slice of its own.
func above(stable int64, ds []document.Document) []document.Document {
	return slices.DeleteFunc(slices.Clone(ds), func(d document.Document) bool { return d.Seq <= stable })
}
