package library

// The rule this file keeps, the sync guarantee (CONTRACT.md §8): a client
// that starts without a cursor and applies every page in order holds the
// public documents, whatever writes happen meanwhile, through any number
// of replicas.
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
// is purged and swept, the horizon rises past its deletion, and a client
// that holds the document can no longer be told. A snapshot holds no
// public document whose deletion is at or below its stable point
// (follower.go), so a client holds no document deleted at or below the
// lowest stable point of the snapshots that answered the pages it applied
// (the cursor's Floor). A cursor is expired (410) only when the horizon
// rose past both its position and its floor: only then may its client hold
// a document whose removal it was not told. A first sync of many pages,
// whose cursors are positions among old documents, goes on after a purge
// of a document deleted before it began.
//
// The cursor also carries the fingerprint of the tag categories its client
// holds: a page carries them when they differ, and they are revalidated
// with taxonomy first when the page holds a document changed after the
// categories held were checked (categories.go): the client can resolve the
// tags of every document it holds.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/doclib/services/catalog/internal/document"
)

// PageSize is the most documents (and removed ids) a page holds.
const PageSize = 1000

// PageBytes bounds the JSON of a page's documents and removed ids: a page
// stops before the item that would take it past, and holds at least one.
// A document of the sync is small (its short form: up to some 10 KiB with
// the longest title, URL and 100 tags), so only pages of such documents
// are cut by it; its client calls again at once, as after any page with
// hasMore.
const PageBytes = 1 << 20

// pageWait bounds how long a sync page waits for the follower (snapshotFor).
const pageWait = time.Second

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
	// Floor is the lowest stable point of the snapshots that answered the
	// pages its client applied since its first sync: the client holds no
	// document deleted at or below it. (Cursors made before it was the
	// floor carry the lowest horizon there, which is below that: such a
	// cursor is expired a little sooner, never wrongly kept.)
	Floor int64
	// Categories is the fingerprint of the tag categories sent (0: none).
	Categories uint64
}

const (
	// cursorVersion 2 added the floor; a cursor of version 1 is refused
	// (400), and its client starts again without one.
	cursorVersion = 2
	maxCursorLen  = 256 // encoded; a real one is under 125
	maxPosition   = 1 << 62
)

// String encodes c: base64url of a version byte, the seq, the floor, the
// id and the categories' fingerprint. Clients never parse it.
func (c Cursor) String() string {
	b := []byte{cursorVersion}
	b = binary.AppendUvarint(b, uint64(c.Seq))
	b = binary.AppendUvarint(b, uint64(c.Floor))
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
	floor, n := binary.Uvarint(b)
	if n <= 0 || floor > maxPosition {
		return bad("bad floor")
	}
	b = b[n:]
	idLen, n := binary.Uvarint(b)
	if n <= 0 || idLen > document.MaxRefIDLen || uint64(len(b)-n) != idLen+8 {
		return bad("bad position")
	}
	id := string(b[n : n+int(idLen)])
	return Cursor{Seq: int64(seq), Floor: int64(floor), ID: id, Categories: binary.BigEndian.Uint64(b[n+int(idLen):])}, nil
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
func (s *Snapshot) page(from *Cursor, limit, maxBytes int) Page {
	var pos Cursor
	if from != nil {
		pos = *from
	}
	var p Page
	i := sort.Search(len(s.bySeq), func(i int) bool { return pos.after(s.bySeq[i]) })
	n, size := 0, 0
	var last *document.Document
	for ; i < len(s.bySeq); i++ {
		d := s.bySeq[i]
		beyond := d.Seq > s.Stable
		item := itemBytes(d, from != nil)
		if n == limit || n > 0 && size+item > maxBytes {
			p.HasMore = !beyond
			break
		}
		switch {
		case !d.IsDeleted:
			p.Documents = append(p.Documents, d)
			n, size = n+1, size+item
		case from != nil:
			p.Removed = append(p.Removed, d.ID)
			n, size = n+1, size+item
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
// snapshot is the current one if read within publicLag, or a fresh one
// when the cursor is ahead of it (made by a fresher replica).
func (l *Library) Sync(ctx context.Context, raw string, publicLag time.Duration) (Page, error) {
	var from *Cursor
	if raw != "" {
		c, err := ParseCursor(raw)
		if err != nil {
			return Page{}, err
		}
		from = &c
	}
	s, err := l.snapshotFor(ctx, from, publicLag)
	if err != nil {
		return Page{}, err
	}
	p := s.page(from, l.pageSize, l.pageBytes)
	p.Next.Floor = s.Stable
	if from != nil {
		p.Next.Floor = min(from.Floor, s.Stable)
	}
	if err := l.addCategories(ctx, &p, from); err != nil {
		return Page{}, err
	}
	p.From = s
	if from == nil {
		// The cursor names the stable point, floor and categories the
		// page was made with (or where a page of many stopped).
		p.Shared = fmt.Sprintf("sync:%s:%v", p.Next, p.HasMore)
	}
	return p, nil
}

// snapshotFor returns the snapshot to answer the cursor from: ErrBadCursor
// if it is ahead of every change, ErrCursorExpired if its client may hold
// a document whose removal is gone for good.
func (l *Library) snapshotFor(ctx context.Context, from *Cursor, publicLag time.Duration) (*Snapshot, error) {
	s, err := l.Get(ctx, publicLag)
	if err != nil {
		return nil, err
	}
	if publicLag > 0 && s.Counter > s.Stable && l.now().Sub(s.taken) >= publicLag {
		// Documents put above the stable point would be sent, and sent
		// again after the next cursor, which stays at the stable point: as
		// before the follower, the page waits for a look after them, for
		// as long as the store answers within pageWait.
		wait, cancel := context.WithTimeout(ctx, pageWait)
		if fresh, err := l.fresh(wait); err == nil {
			s = fresh
		}
		cancel()
	}
	if from != nil && (from.Seq > s.Stable || from.Floor > s.Stable) {
		// Made by a fresher replica, or made up: a fresh snapshot.
		if s, err = l.Get(ctx, 0); err != nil {
			return nil, err
		}
		if from.Seq > s.Counter || from.Floor > s.Counter {
			return nil, fmt.Errorf("%w: it is ahead of every change", ErrBadCursor)
		}
	}
	if from != nil && s.Horizon > max(from.Seq, from.Floor) {
		return nil, ErrCursorExpired
	}
	return s, nil
}

// addCategories adds the tag categories to p when its client needs them:
// on a first sync, when the client's differ from the current ones, and
// when p holds a document the categories held may not describe (it
// changed after they were checked: they are revalidated first, and the
// page fails while taxonomy cannot say).
func (l *Library) addCategories(ctx context.Context, p *Page, from *Cursor) error {
	var newest int64
	for _, d := range p.Documents {
		newest = max(newest, d.Seq)
	}
	lag := time.Second
	if len(p.Documents) > 0 && !l.describes(newest) {
		lag = 0 // a page without documents names no tag: nothing to resolve
	}
	cats, err := l.Categories(ctx, lag)
	switch {
	case lag == 0 && err != nil:
		return err // the client could not resolve the page's tags
	case from == nil && cats == nil:
		if err == nil {
			err = errors.New("no tag categories")
		}
		return err // the first sync must carry the categories
	case from != nil && cats != nil && from.Categories != cats.Fingerprint && lag > 0:
		// This replica may hold older categories than the client (from a
		// fresher replica): revalidate before sending any.
		cats, _ = l.Categories(ctx, 100*time.Millisecond)
	}
	switch {
	case cats != nil && (from == nil || from.Categories != cats.Fingerprint):
		p.Categories, p.Next.Categories = cats.Body, cats.Fingerprint
	case from != nil:
		p.Next.Categories = from.Categories // none sent: the client keeps its own
	}
	return nil
}

// itemBytes is the most JSON d takes in a page: its short form with
// updatedAt, or its id among the removed ones (0 when a first sync, which
// sends no removals, skips it).
func itemBytes(d *document.Document, removals bool) int {
	if d.IsDeleted {
		if !removals {
			return 0
		}
		return jsonLen(d.ID) + 1
	}
	const fixed = len(`{"id":,"title":,"type":"MARKDOWN","tagsIds":[],"updatedAt":"2026-11-22T10:15:30.123Z"},`)
	n := fixed + jsonLen(d.ID) + jsonLen(d.Title)
	if d.URL != "" {
		n += len(`,"url":`) + jsonLen(d.URL)
	}
	for _, t := range d.TagsIDs {
		n += jsonLen(t) + 1
	}
	return n
}

// jsonLen is the most bytes s takes as a JSON string (encoding/json's
// escapes: six bytes for a control character, <, >, &, U+2028, U+2029 or
// an invalid byte).
func jsonLen(s string) int {
	n := 2
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			n += 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029 || r == utf8.RuneError:
			n += 6
		default:
			n += utf8.RuneLen(r)
		}
	}
	return n
}
