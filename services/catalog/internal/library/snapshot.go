package library

// The rule this file keeps: a Snapshot never changes once it is published.
// Any number of readers share it without locks; the next one is built
// beside it (sharing what did not change) and published in its place
// (follower.go). What a public read may see is decided in one place:
// public.

import (
	"cmp"
	"slices"
	"sync"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// Snapshot is the catalog as this replica holds it at one moment.
type Snapshot struct {
	// Stable: every change up to it is in; Counter: the highest seq held;
	// Horizon: the highest deletion of a purged document gone for good.
	Stable, Counter, Horizon int64

	look  uint64    // the follower's look that read it (0: never read)
	taken time.Time // when that look began (monotonic reading)

	*contents
}

// contents are the documents of a snapshot, their indexes and their
// renderings: they depend on the documents and categories alone, so a
// snapshot that changes neither shares them with the one before.
type contents struct {
	docs   map[string]*document.Document // every document, deleted and purged ones too
	newest []*document.Document          // not purged, newest first (ties by id)
	live   []*document.Document          // public ones, newest first
	bySeq  []*document.Document          // every document, in (seq, id) order
	byTag  map[string][]*document.Document
	cats   *Categories
	memo   sync.Map // key -> *memoEntry: what was rendered from them
}

// public reports whether the public side sees d: listed, found by its
// detail, related, and sent live by sync (otherwise sync sends it as
// removed). The one place where that is decided.
func public(d *document.Document) bool { return !d.IsDeleted && !d.Purged() }

func newSnapshot(docs map[string]*document.Document, stable, counter, horizon int64, cats *Categories) *Snapshot {
	s := &Snapshot{Stable: stable, Counter: counter, Horizon: horizon,
		contents: &contents{docs: docs, cats: cats, byTag: map[string][]*document.Document{}}}
	if s.docs == nil {
		s.docs = map[string]*document.Document{}
	}
	for _, d := range s.docs {
		s.bySeq = append(s.bySeq, d)
		if !d.Purged() {
			s.newest = append(s.newest, d)
		}
		if public(d) {
			for _, t := range d.TagsIDs {
				s.byTag[t] = append(s.byTag[t], d)
			}
		}
	}
	slices.SortFunc(s.bySeq, func(a, b *document.Document) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	})
	slices.SortFunc(s.newest, func(a, b *document.Document) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	for _, d := range s.newest {
		if public(d) {
			s.live = append(s.live, d)
		}
	}
	return s
}

// with returns a snapshot with the changes applied (a document already
// held at the same or a higher seq keeps it), and without the tombstones
// the horizon has passed. When that changes none of the documents nor the
// categories, it shares s's contents and what was rendered from them. The
// look and its time are s's: the caller sets them when they change.
func (s *Snapshot) with(changes []document.Document, stable, counter, horizon int64, cats *Categories) *Snapshot {
	if cats == s.cats && !s.changedBy(changes, horizon) {
		return &Snapshot{Stable: stable, Counter: counter, Horizon: horizon, look: s.look, taken: s.taken, contents: s.contents}
	}
	docs := make(map[string]*document.Document, len(s.docs)+len(changes))
	for id, d := range s.docs {
		docs[id] = d
	}
	for _, d := range changes {
		if old, ok := docs[d.ID]; !ok || old.Seq < d.Seq {
			// A copy of its own: a pointer into changes would keep every
			// document read with it alive, old versions included.
			held := publicOf(d)
			docs[d.ID] = &held
		}
	}
	for id, d := range docs {
		if d.Purged() && d.DeletedSeq <= horizon {
			delete(docs, id)
		}
	}
	next := newSnapshot(docs, stable, counter, horizon, cats)
	next.look, next.taken = s.look, s.taken
	return next
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

// loaded reports whether the snapshot was read from the store at least once.
func (s *Snapshot) loaded() bool { return s.look > 0 }

// Doc returns the document id, deleted or not; purged ones are gone.
func (s *Snapshot) Doc(id string) (*document.Document, bool) {
	d, ok := s.docs[id]
	if !ok || d.Purged() {
		return nil, false
	}
	return d, true
}

// Public returns the document id if the public side sees it.
func (s *Snapshot) Public(id string) (*document.Document, bool) {
	d, ok := s.docs[id]
	if !ok || !public(d) {
		return nil, false
	}
	return d, true
}

// Listing returns the documents newest first: every one but the purged
// (withDeleted, the back-office's), or the public ones.
func (s *Snapshot) Listing(withDeleted bool) []*document.Document {
	if withDeleted {
		return s.newest
	}
	return s.live
}

// Related returns the documents shown as related to d (document.Related):
// public ones only.
func (s *Snapshot) Related(d *document.Document) []*document.Document {
	var sharing []*document.Document
	for _, t := range d.TagsIDs {
		sharing = append(sharing, s.byTag[t]...)
	}
	return document.Related(d, s.Public, sharing, s.cats.CategoryOf)
}

type memoEntry struct {
	once sync.Once
	val  any
	err  error
}

// Memo returns what make returns for key, made once per contents: a
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
