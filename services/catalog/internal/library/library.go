// Package library keeps every document of the catalog in memory, one copy
// per replica, in step with the store by following its change sequence
// (see document/mongostore), and answers the reads from it: the listings,
// a detail with its related documents, and the sync feed (sync.go). The
// library is small by design, so a replica holds all of it: a read costs
// no database round trip, only, at most every maxLag, one look at the
// sequence's counter.
//
// Freshness: a write through this replica, or by its event consumers, is
// in its memory at once (Put). A read asks for the library as fresh as
// maxLag: a back-office read asks for 0 (the counter is looked at after
// the request arrived, so an author sees their own write through any
// replica), a public read for 100 ms, served from the current snapshot
// while one request refreshes it.
package library

import (
	"cmp"
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
	// Counter is the highest seq handed out.
	Counter(ctx context.Context) (int64, error)
	// Stable is a point of the sequence up to which every write is
	// visible to reads made after the call.
	Stable(ctx context.Context) (int64, error)
	// Horizon is the highest DeletedSeq of the purged documents gone for
	// good.
	Horizon(ctx context.Context) (int64, error)
	// Changes returns up to limit documents after (afterSeq, afterID) in
	// (seq, id) order ("" : every document at afterSeq was read).
	Changes(ctx context.Context, afterSeq int64, afterID string, limit int) ([]document.Document, error)
	// Present returns which of ids are documents not purged.
	Present(ctx context.Context, ids []string) ([]string, error)
}

// pageSize is how many documents one read of the changes asks for: the
// whole library at the size it is designed for, so that a replica starting
// cold reads it in one query (on MongoDB, one index range streamed in
// batches; on the development database every such query reads the whole
// collection, and ten of them at 10,000 documents took longer than a look
// may: bench/results/database.md).
const pageSize = 10000

// Library is one replica's copy of the catalog.
type Library struct {
	src      Source
	tax      *taxonomy
	log      *slog.Logger
	pageSize int              // of a sync page: PageSize, smaller in tests
	now      func() time.Time // time.Now; tests step it

	// checks counts the looks at the counter begun, under lookMu: a call that
	// finds a snapshot checked by a look numbered above the count it saw
	// on arrival needs no look of its own. A count, not a time, so that a
	// wall clock stepped back never passes for a look to come.
	checks atomic.Uint64

	cur atomic.Pointer[Snapshot]
	// mu orders the changes of cur: a look's result, Put, new categories.
	// A look reads the store without it (there is one look at a time), so
	// that Put, which a write or an event's handler waits for, never waits
	// for a look's reads (a whole collection on a slow database); what is
	// put meanwhile is kept in putting and applied to the look's result.
	mu      sync.Mutex
	reading bool                // a look is reading the store
	putting []document.Document // put while it reads

	lookMu  sync.Mutex
	looking *look // the look under way, if any (under lookMu)
}

// look is one look at the store's counter, and the refresh it leads to,
// shared by the calls that arrive while it runs. It runs to its end (or
// refreshBudget) whatever becomes of the call that began it: cut at a
// request's budget, a refresh that reads more than one request's worth of
// changes (a replica starting cold, or behind after a burst of writes on a
// slow database) would lose what it read, and every request after it would
// begin again and be cut again: the replica would never catch up.
type look struct {
	n    uint64 // its number: checks after it began
	done chan struct{}
	s    *Snapshot // once done
	err  error
}

// refreshBudget bounds one look at the store, however many calls wait.
const refreshBudget = time.Minute

// New returns an empty Library that fills itself on its first Get. tags
// gives the tag categories (sync and the related documents' order).
func New(src Source, tags Taxonomy, log *slog.Logger) *Library {
	l := &Library{src: src, tax: &taxonomy{src: tags}, log: log, pageSize: PageSize, now: time.Now}
	l.cur.Store(newSnapshot(nil, 0, 0, 0, nil))
	return l
}

// Current returns the snapshot held now, however old.
func (l *Library) Current() *Snapshot { return l.cur.Load() }

// Get returns a snapshot whose counter was looked at no longer than maxLag
// before the call (0: after it), reading the changes since the last one if
// the counter moved. While one call refreshes, calls that allow a lag get
// the current snapshot without waiting.
func (l *Library) Get(ctx context.Context, maxLag time.Duration) (*Snapshot, error) {
	asked, seen := l.now(), l.checks.Load()
	s := l.cur.Load()
	if c := s.checked.Load(); c != nil && maxLag > 0 && asked.Sub(c.at) < maxLag {
		return s, nil
	}
	for {
		l.lookMu.Lock()
		if s = l.cur.Load(); s.loaded() && s.checked.Load().n > seen {
			l.lookMu.Unlock()
			return s, nil // refreshed by a look begun after this call
		}
		lk := l.looking
		if lk == nil {
			lk = l.begin(ctx)
		} else if s.loaded() && maxLag > 0 {
			l.lookMu.Unlock()
			return s, nil // a look is under way: the snapshot held will do
		}
		l.lookMu.Unlock()
		select {
		case <-lk.done:
		case <-ctx.Done():
			return nil, ctx.Err() // the look goes on for the calls after this one
		}
		if lk.n > seen {
			return lk.s, lk.err
		}
		// That look began before this call: one of its own next.
	}
}

// begin starts a look at the store, under lookMu. Its context keeps the
// caller's values (its trace) but not its end.
func (l *Library) begin(ctx context.Context) *look {
	lk := &look{n: l.checks.Add(1), done: make(chan struct{})}
	l.looking = lk
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), refreshBudget)
		defer cancel()
		defer func() {
			// Outside any request, a panic would end the process (a request
			// of its own was a 500): the look fails instead, and always ends.
			if p := recover(); p != nil {
				lk.s, lk.err = nil, fmt.Errorf("a look at the store panicked: %v", p)
			}
			l.lookMu.Lock()
			l.looking = nil
			l.lookMu.Unlock()
			close(lk.done)
		}()
		lk.s, lk.err = l.lookAt(ctx, &check{n: lk.n, at: l.now()})
	}()
	return lk
}

// lookAt looks at the store's counter and reads the changes since the
// snapshot held if it moved.
func (l *Library) lookAt(ctx context.Context, begun *check) (*Snapshot, error) {
	l.mu.Lock()
	s := l.cur.Load()
	l.reading, l.putting = true, nil
	l.mu.Unlock()
	defer func() { // also when lookFrom panics
		l.mu.Lock()
		l.reading, l.putting = false, nil
		l.mu.Unlock()
	}()
	next, err := l.lookFrom(ctx, s)
	l.mu.Lock()
	defer l.mu.Unlock()
	put := l.putting
	if err != nil {
		return nil, err
	}
	if next != nil {
		// What the read covers (up to its stable point) is in next as the
		// store has it now, or gone for good: put back, a document purged
		// and swept during the read would come back, and no later read
		// would remove it.
		put = slices.DeleteFunc(put, func(d document.Document) bool { return d.Seq <= next.Stable })
	}
	cur := l.cur.Load()
	if next == nil { // nothing was written since s's stable point
		cur.checked.Store(begun) // cur is s, or s with what was put since
		return cur, nil
	}
	if len(put) > 0 || cur.cats != s.cats {
		// Put or new categories while the store was read: next, read
		// from s, lacks them.
		counter := next.Counter
		for _, d := range put {
			counter = max(counter, d.Seq)
		}
		next = next.with(put, next.Stable, counter, next.Horizon, cur.cats)
	}
	next.checked.Store(begun)
	l.cur.Store(next)
	return next, nil
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

// refresh reads every change after s's stable point. The stable point is
// read first: every write up to it is visible to the reads that follow.
// The horizon is read last: the sweep raises it before it removes a purged
// document, so a document the changes no longer hold is under the horizon
// read after them (read before, a replica that never held the document
// would serve cursors that missed its removal).
//
// A snapshot holds no live document whose deletion is at or below its
// horizon (sync.go rests on it). A document deleted at or below the
// stable point it was read from is held deleted, not live. So only a
// document deleted above it, then purged and removed for good before the
// horizon was read, can be held live wrongly: from s, whose replica did
// not look at the store for longer than the trash retention, or from the
// changes, read before its deletion with a retention shorter than a
// refresh. The horizon then is above that stable point, and every document
// is read again.
func (l *Library) refresh(ctx context.Context, s *Snapshot, counter int64) (*Snapshot, error) {
	base := s
	for reads := 1; ; reads++ {
		stable, changes, horizon, err := l.read(ctx, base.Stable)
		if err != nil {
			return nil, err
		}
		from := base.Stable
		if len(base.docs) == 0 {
			from = stable // nothing held: only the changes can hold such a document
		}
		if horizon <= from {
			// s's stable point holds for the reads after it, a read anew too.
			return l.apply(ctx, base, changes, max(s.Stable, stable), max(s.Counter, counter), max(s.Horizon, horizon))
		}
		// Again, for as long as the look may last: a cap of three reads
		// failed a replica's load while sweeps ran faster than it could
		// read everything (TestSyncSkipsNothing, about one run in ten).
		// After a pause that grows, so that a horizon held above the
		// stable point (a dead writer's hold, up to 35 s) does not make
		// back-to-back reads of every document.
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("documents were purged while they were read, %d times in a row: %w", reads, context.Cause(ctx))
		case <-time.After(min(time.Duration(reads)*20*time.Millisecond, time.Second)):
		}
		base = newSnapshot(nil, 0, 0, 0, s.cats)
	}
}

// read returns a stable point, every document changed after the stable
// point after, and then the horizon.
func (l *Library) read(ctx context.Context, after int64) (stable int64, changes []document.Document, horizon int64, err error) {
	if stable, err = l.src.Stable(ctx); err != nil {
		return 0, nil, 0, err
	}
	seq, id := after, ""
	for {
		page, err := l.src.Changes(ctx, seq, id, pageSize)
		if err != nil {
			return 0, nil, 0, err
		}
		changes = append(changes, page...)
		if len(page) < pageSize {
			break
		}
		seq, id = page[len(page)-1].Seq, page[len(page)-1].ID
	}
	horizon, err = l.src.Horizon(ctx)
	return stable, changes, horizon, err
}

// apply returns s with the changes read, and without the documents the
// horizon passed that are gone for good.
func (l *Library) apply(ctx context.Context, s *Snapshot, changes []document.Document, stable, counter, horizon int64) (*Snapshot, error) {
	next := s.with(changes, stable, counter, horizon, s.cats)
	if horizon > s.Horizon {
		// Documents purged and removed for good between two refreshes were
		// never seen as tombstones here: those the horizon passed that are
		// still held as deleted are asked about.
		var ids []string
		for id, d := range next.docs {
			if d.IsDeleted && d.DeletedSeq <= horizon {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			present, err := l.src.Present(ctx, ids)
			if err != nil {
				return nil, err
			}
			next = next.without(ids, present)
		}
	}
	return next, nil
}

// without returns s without the documents of ids that are not in present.
func (s *Snapshot) without(ids, present []string) *Snapshot {
	var gone []string
	for _, id := range ids {
		if !slices.Contains(present, id) {
			gone = append(gone, id)
		}
	}
	if len(gone) == 0 {
		return s
	}
	docs := make(map[string]*document.Document, len(s.docs))
	for id, d := range s.docs {
		docs[id] = d
	}
	for _, id := range gone {
		delete(docs, id)
	}
	return newSnapshot(docs, s.Stable, s.Counter, s.Horizon, s.cats)
}

// Put puts documents this replica just wrote into memory (a back-office
// write, or what an event changed), so that their author, and the public
// side of this replica, read them at once; the store's changes bring them
// to the others. Many documents make one new snapshot.
func (l *Library) Put(ds ...document.Document) {
	if len(ds) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reading {
		l.putting = append(l.putting, ds...)
	}
	s := l.cur.Load()
	// At or below the stable point, s has read the document from the store
	// (or seen it purged for good): nothing to put.
	ds = slices.DeleteFunc(slices.Clone(ds), func(d document.Document) bool { return d.Seq <= s.Stable })
	if !s.changedBy(ds, s.Horizon) {
		return // each held already, at the same or a later seq
	}
	counter := s.Counter
	for _, d := range ds {
		counter = max(counter, d.Seq)
	}
	next := s.with(ds, s.Stable, counter, s.Horizon, s.cats)
	next.checked.Store(s.checked.Load())
	l.cur.Store(next)
}

// setCategories makes a snapshot with new tag categories (the related
// documents' order depends on them).
func (l *Library) setCategories(c *Categories) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.cur.Load()
	if s.cats != nil && c != nil && s.cats.Fingerprint == c.Fingerprint {
		return
	}
	next := s.with(nil, s.Stable, s.Counter, s.Horizon, c)
	next.checked.Store(s.checked.Load())
	l.cur.Store(next)
}

// Snapshot is the catalog as this replica holds it at one moment. It never
// changes once made (but for when its counter was last looked at), so any
// number of readers share it; what is rendered from it is kept with its
// contents (Memo), which the next snapshot shares when they did not change.
type Snapshot struct {
	// Stable: every change up to it is in; Counter: the highest seq seen;
	// Horizon: cursors below it are expired.
	Stable, Counter, Horizon int64

	*contents
	checked atomic.Pointer[check] // the last look at the counter; nil: never
}

// contents are the documents of a snapshot, their indexes and their
// renderings: they depend on the documents and categories alone.
type contents struct {
	docs   map[string]*document.Document // every document, deleted and purged ones too
	newest []*document.Document          // not purged, newest first (ties by id)
	live   []*document.Document          // not deleted, newest first
	bySeq  []*document.Document          // every document, in (seq, id) order
	byTag  map[string][]*document.Document
	cats   *Categories
	memo   sync.Map // key -> *memoEntry
}

func newSnapshot(docs map[string]*document.Document, stable, counter, horizon int64, cats *Categories) *Snapshot {
	s := &Snapshot{Stable: stable, Counter: counter, Horizon: horizon,
		contents: &contents{docs: docs, cats: cats, byTag: map[string][]*document.Document{}}}
	if s.docs == nil {
		s.docs = map[string]*document.Document{}
	}
	for _, d := range s.docs {
		s.bySeq = append(s.bySeq, d)
		if d.Purged() {
			continue
		}
		s.newest = append(s.newest, d)
		if !d.IsDeleted {
			for _, t := range d.TagsIDs {
				s.byTag[t] = append(s.byTag[t], d)
			}
		}
	}
	slices.SortFunc(s.bySeq, func(a, b *document.Document) int {
		if c := cmp.Compare(a.Seq, b.Seq); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	slices.SortFunc(s.newest, func(a, b *document.Document) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	for _, d := range s.newest {
		if !d.IsDeleted {
			s.live = append(s.live, d)
		}
	}
	return s
}

// with returns a snapshot with the changes applied (a document already
// held at the same or a higher seq keeps it), and without the tombstones
// the horizon has passed. When that changes none of the documents nor the
// categories, it shares s's contents and what was rendered from them.
func (s *Snapshot) with(changes []document.Document, stable, counter, horizon int64, cats *Categories) *Snapshot {
	if cats == s.cats && !s.changedBy(changes, horizon) {
		return &Snapshot{Stable: stable, Counter: counter, Horizon: horizon, contents: s.contents}
	}
	docs := make(map[string]*document.Document, len(s.docs)+len(changes))
	for id, d := range s.docs {
		docs[id] = d
	}
	for _, d := range changes {
		if old, ok := docs[d.ID]; !ok || old.Seq < d.Seq {
			// A copy of its own: a pointer into changes would keep every
			// document read with it alive, old versions included, for as
			// long as one of them is current.
			held := publicOf(d)
			docs[d.ID] = &held
		}
	}
	for id, d := range docs {
		if d.Purged() && d.DeletedSeq <= horizon {
			delete(docs, id)
		}
	}
	return newSnapshot(docs, stable, counter, horizon, cats)
}

// changedBy reports whether applying changes, and the horizon, to s would
// change any document it holds.
func (s *Snapshot) changedBy(changes []document.Document, horizon int64) bool {
	for _, d := range changes {
		if old, ok := s.docs[d.ID]; !ok || old.Seq < d.Seq {
			return true
		}
	}
	if horizon > s.Horizon {
		for _, d := range s.docs {
			if d.Purged() && d.DeletedSeq <= horizon {
				return true
			}
		}
	}
	return false
}

// check is one look at the counter: its number (Library.checks) and when
// it began, with the monotonic clock's reading.
type check struct {
	n  uint64
	at time.Time
}

// loaded reports whether the snapshot was read from the store at least once.
func (s *Snapshot) loaded() bool { return s.checked.Load() != nil }

// Doc returns the document id, deleted or not; purged ones are gone.
func (s *Snapshot) Doc(id string) (*document.Document, bool) {
	d, ok := s.docs[id]
	if !ok || d.Purged() {
		return nil, false
	}
	return d, true
}

// Listing returns the documents newest first: every one but the purged
// (withDeleted), or the live ones.
func (s *Snapshot) Listing(withDeleted bool) []*document.Document {
	if withDeleted {
		return s.newest
	}
	return s.live
}

// Related returns the documents shown as related to d (document.Related).
func (s *Snapshot) Related(d *document.Document) []*document.Document {
	var sharing []*document.Document
	for _, t := range d.TagsIDs {
		sharing = append(sharing, s.byTag[t]...)
	}
	return document.Related(d, s.Doc, sharing, s.cats.CategoryOf)
}

type memoEntry struct {
	once sync.Once
	val  any
	err  error
}

// Memo returns what make returns for key, made once per snapshot: a
// rendering of something the snapshot holds.
func (s *Snapshot) Memo(key string, make func() (any, error)) (any, error) {
	e, _ := s.memo.LoadOrStore(key, &memoEntry{})
	m := e.(*memoEntry)
	m.once.Do(func() { m.val, m.err = make() })
	if m.err != nil {
		s.memo.Delete(key) // not kept: the next call tries again
	}
	return m.val, m.err
}
