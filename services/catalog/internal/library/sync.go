package library

// The sync feed (CONTRACT.md §8): a client that starts without a cursor
// and applies every page in order holds the live documents, whatever
// writes happen meanwhile, through any number of replicas.
//
// A cursor is a position in the store's change sequence: every document
// at or before it has been sent as it was then, or as it became later. A
// page holds the documents after the position, in (seq, id) order, up to
// the snapshot's stable point (every write up to it is visible, so none
// below it can appear later: the store's package comment proves it), and
// the next cursor points after the last one sent. A write that takes its
// place in the sequence later than the stable point is in a later page.
// Each document is held once, as it is now, so a document changed again
// is sent at its new place only: sent once more, never skipped.
//
// Removals are kept as long as the documents are, in the trash; once one
// is purged and swept, the horizon rises past its deletion. A cursor is
// expired (410) when the horizon rose past both its position and the
// horizon of every page its client applied (the lowest, carried by the
// cursor): only then may the client hold a document whose removal it can
// no longer be told. A snapshot holds no live document whose deletion is
// under its horizon (refresh), so pages read from snapshots at or above a
// horizon never gave the client such a document, whatever their position:
// a first sync of many pages, whose cursors are positions among old
// documents, goes on after a purge.
//
// The cursor also carries the fingerprint of the tag categories its client
// holds: a page carries them only when they differ.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// PageSize is the most documents (and removed ids) a page holds.
const PageSize = 1000

// Errors of a sync request.
var (
	// ErrBadCursor: the cursor is not one this service made (400).
	ErrBadCursor = errors.New("malformed sync cursor")
	// ErrCursorExpired: the cursor is older than the tombstones kept (410):
	// the client starts again without one.
	ErrCursorExpired = errors.New("sync cursor expired")
)

// Cursor is a position in the sync feed.
type Cursor struct {
	// Seq, ID: every document up to (Seq, ID) in (seq, id) order was sent;
	// ID "" means every document up to Seq.
	Seq int64
	ID  string
	// Horizon is the lowest horizon of the snapshots that answered the
	// pages its client applied since its first sync: the client holds no
	// document deleted at or below it and purged.
	Horizon int64
	// Categories is the fingerprint of the tag categories sent (0: none).
	Categories uint64
}

const (
	// cursorVersion 2 added the horizon; a cursor of version 1 is refused
	// (400), and its client starts again without one.
	cursorVersion = 2
	maxCursorLen  = 256 // encoded; a real one is under 125
	maxPosition   = 1 << 62
)

// String encodes c: base64url of a version byte, the seq, the horizon, the
// id and the categories' fingerprint. Clients never parse it.
func (c Cursor) String() string {
	b := []byte{cursorVersion}
	b = binary.AppendUvarint(b, uint64(c.Seq))
	b = binary.AppendUvarint(b, uint64(c.Horizon))
	b = binary.AppendUvarint(b, uint64(len(c.ID)))
	b = append(b, c.ID...)
	b = binary.BigEndian.AppendUint64(b, c.Categories)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor decodes a cursor made by String; anything else is
// ErrBadCursor.
func ParseCursor(s string) (Cursor, error) {
	bad := func(why string) (Cursor, error) { return Cursor{}, fmt.Errorf("%w: %s", ErrBadCursor, why) }
	if s == "" || len(s) > maxCursorLen {
		return bad("empty or too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	if len(b) == 0 || b[0] != cursorVersion {
		return bad("unknown version")
	}
	b = b[1:]
	seq, n := binary.Uvarint(b)
	if n <= 0 || seq > maxPosition {
		return bad("bad position")
	}
	b = b[n:]
	horizon, n := binary.Uvarint(b)
	if n <= 0 || horizon > maxPosition {
		return bad("bad horizon")
	}
	b = b[n:]
	idLen, n := binary.Uvarint(b)
	if n <= 0 || idLen > document.MaxRefIDLen || uint64(len(b)-n) != idLen+8 {
		return bad("bad position")
	}
	id := string(b[n : n+int(idLen)])
	return Cursor{Seq: int64(seq), Horizon: int64(horizon), ID: id, Categories: binary.BigEndian.Uint64(b[n+int(idLen):])}, nil
}

// after reports whether d comes after the position c.
func (c Cursor) after(d *document.Document) bool {
	return d.Seq > c.Seq || (c.ID != "" && d.Seq == c.Seq && d.ID > c.ID)
}

// Page is one answer of the sync feed.
type Page struct {
	Next      Cursor
	HasMore   bool
	Documents []*document.Document // live documents created, changed or restored
	Removed   []string             // ids of documents deleted (or purged)
	// Categories is the TagCategory[] JSON when the client's differ from
	// the current ones; nil otherwise.
	Categories []byte

	// From is the snapshot the page was read from. Shared, when not empty,
	// names the page among those of From's contents: every client asking
	// the same gets the same page (a first sync), so its rendering may be
	// kept (From.Memo) instead of made for each request.
	From   *Snapshot
	Shared string
}

// page returns the page after from (nil: the first sync, which sends live
// documents only). Documents changed after the stable point (held at a
// seq above it) are sent too on the last page, while it has room: they
// are committed, and come again after the next cursor.
func (s *Snapshot) page(from *Cursor, limit int) Page {
	var pos Cursor
	if from != nil {
		pos = *from
	}
	var p Page
	i := sort.Search(len(s.bySeq), func(i int) bool { return pos.after(s.bySeq[i]) })
	n := 0
	var last *document.Document
	for ; i < len(s.bySeq); i++ {
		d := s.bySeq[i]
		beyond := d.Seq > s.Stable
		if n == limit {
			p.HasMore = !beyond
			break
		}
		switch {
		case !d.IsDeleted:
			p.Documents = append(p.Documents, d)
			n++
		case from != nil:
			p.Removed = append(p.Removed, d.ID)
			n++
		}
		if !beyond {
			last = d
		}
	}
	switch {
	case p.HasMore:
		p.Next = Cursor{Seq: last.Seq, ID: last.ID}
	case s.Stable >= pos.Seq:
		p.Next = Cursor{Seq: s.Stable}
	default:
		p.Next = Cursor{Seq: pos.Seq, ID: pos.ID} // this replica is behind the cursor
	}
	return p
}

// Sync answers a sync request whose cursor is raw ("" for the first). The
// replica's memory is refreshed as a public read would (publicLag), or at
// once when the cursor is ahead of it (made by a fresher replica).
func (l *Library) Sync(ctx context.Context, raw string, publicLag time.Duration) (Page, error) {
	var from *Cursor
	if raw != "" {
		c, err := ParseCursor(raw)
		if err != nil {
			return Page{}, err
		}
		from = &c
	}
	s, err := l.Get(ctx, publicLag)
	if err != nil {
		return Page{}, err
	}
	if from != nil && (from.Seq > s.Stable || from.Horizon > s.Horizon) {
		// Made by a fresher replica, or made up: look at the store.
		if s, err = l.Get(ctx, 0); err != nil {
			return Page{}, err
		}
		if from.Seq > s.Counter || from.Horizon > s.Horizon {
			return Page{}, fmt.Errorf("%w: it is ahead of every change", ErrBadCursor)
		}
	}
	if from != nil && s.Horizon > max(from.Seq, from.Horizon) {
		return Page{}, ErrCursorExpired
	}
	cats, err := l.Categories(ctx, time.Second)
	if from == nil && cats == nil {
		if err == nil {
			err = errors.New("no tag categories")
		}
		return Page{}, err // the first sync must carry the categories
	}
	if from != nil && cats != nil && from.Categories != cats.Fingerprint {
		// This replica may hold older categories than the client (from a
		// fresher replica): revalidate before sending any.
		cats, _ = l.Categories(ctx, 100*time.Millisecond)
	}
	p := s.page(from, l.pageSize)
	p.Next.Horizon = s.Horizon
	if from != nil {
		p.Next.Horizon = min(from.Horizon, s.Horizon)
	}
	switch {
	case cats != nil && (from == nil || from.Categories != cats.Fingerprint):
		p.Categories, p.Next.Categories = cats.Body, cats.Fingerprint
	case from != nil:
		p.Next.Categories = from.Categories // none sent: the client keeps its own
	}
	p.From = s
	if from == nil {
		// The cursor names the stable point, horizon and categories the
		// page was made with (or where a page of many stopped).
		p.Shared = fmt.Sprintf("sync:%s:%v", p.Next, p.HasMore)
	}
	return p, nil
}
