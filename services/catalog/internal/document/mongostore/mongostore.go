// Package mongostore keeps the catalog's documents in MongoDB (collection
// documents) and the change sequence's counter (collection meta). bson
// shapes live only here.
//
// # One write path, and a sequence no reader can skip
//
// Every write (Create, Update, UpdateEach) goes through the same steps,
// each a single-document write, so it needs nothing but MongoDB's
// single-document atomicity:
//
//  1. hold: set pending {token, c0, at, tags, media} on the document, only
//     if no other write holds it (or the other's hold is older than
//     holdTTL: its writer died). c0 is a number the counter had already
//     reached; tags and media are the references the write may add. A
//     create inserts the document with seq 0 and its hold.
//  2. read the held document and run the closure on it (the rules, and any
//     lookups in other services).
//  3. take the next number s of the counter (meta {_id: "seq"}, $inc).
//  4. commit: set the new fields and seq s, unset pending, and add the
//     write's events to the outbox, in one update filtered on the hold's
//     token. If the hold was taken over meanwhile, nothing is written and
//     the write starts again from 1.
//
// A reader that wants every change up to a point computes the stable point
// (Stable): c = the counter, then P = the smallest c0 of any hold; stable =
// min(c, P). Every write with seq <= stable is visible to reads made after
// that: its increment came before c was read, so its hold came before too;
// when P was read it was either still held (then P <= c0 < seq, which
// contradicts seq <= stable), committed, or abandoned (it changed
// nothing). A write held after P was read takes its number after c was
// read, so its seq is above the stable point. Documents read by seq above
// a previous stable point therefore never miss a change: the replicas'
// memory and the sync cursor rest on that.
//
// What is here for MongoDB's own races, not for the test database: the
// hold (two writers never interleave, and a deletion in another service
// sees the references a write is about to add: see document/refs.go), the
// token check on commit (a hold taken over by a sweep or another writer),
// and the stable point (the counter's increment and the commit are two
// writes).
package mongostore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/doclib/libs/events"
	idemstore "github.com/doclib/libs/idempotency/mongostore"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/services/catalog/internal/document"
)

// Source is the CloudEvents source of the catalog's events.
const Source = "/catalog"

// holdTTL is how long a write may hold a document before another write (or
// ReleaseStale) may take the hold over: longer than the slowest closure
// (two lookups of at most 5 s each). A writer whose hold was taken over
// finds out at commit, and starts again.
const holdTTL = 30 * time.Second

// busyWait bounds how long a write waits for documents another write
// holds, before it gives up with document.ErrConflict.
const busyWait = 15 * time.Second

// Store implements document.Store.
type Store struct {
	docs *mongo.Collection
	meta *mongo.Collection
	revs *mongo.Collection // revisions.go
	log  *slog.Logger
	now  func() time.Time
	// seen is the highest counter value this process has read: a number
	// the counter had already reached, for the c0 of a hold.
	seen atomic.Int64
	// keys takes expired Idempotency-Keys off (dropExpiredKeys).
	keys idemstore.KeySweep
}

var _ document.Store = (*Store)(nil)

// New returns a Store on db. Call EnsureIndexes once at start-up.
//
// Every read goes to the primary, whatever MONGODB_URI says
// (readPreference=secondaryPreferred, say, to spread reads): a write reads
// its own hold back, and the stable point is sound only over reads that
// see every write acknowledged before them, which a lagging secondary
// does not.
func New(db *mongo.Database, log *slog.Logger) *Store {
	primary := options.Collection().SetReadPreference(readpref.Primary())
	s := &Store{docs: db.Collection("documents", primary), meta: db.Collection("meta", primary),
		revs: db.Collection("revisions", primary), log: log,
		now: func() time.Time { return time.Now().UTC() }}
	s.keys.Every = keySweepEvery
	return s
}

// Documents is the collection, for the outbox relay.
func (s *Store) Documents() *mongo.Collection { return s.docs }

// The _ids in meta of the counter, and of the horizon: the highest
// DeletedSeq of a purged document gone for good (sync cursors below it are
// expired).
const (
	counterID = "seq"
	horizonID = "horizon"
)

// EnsureIndexes creates the indexes and the counter, and gives documents
// stored before the sequence existed their place in it; idempotent, and
// safe when several replicas start together.
func (s *Store) EnsureIndexes(ctx context.Context) error {
	if err := mongox.EnsureIndexes(ctx, s.docs,
		mongox.Index("seq", false, "seq", "_id"),
		mongox.Index("held", false, "held"),
		mongox.Index("createdAt", false, "createdAt"),
		mongox.Index("tagsIds", false, "tagsIds"),
		mongox.Index("fileId", false, "file.id"),
		mongox.Index("imagesIds", false, "imagesIds"),
		mongox.Index("relatedIds", false, "relatedIds"),
		mongox.Index("trash", false, "isDeleted", "deletedAt"),
		mongox.Index("purgedAt", false, "purgedAt"),
		mongox.Index("outbox", false, outbox.CountField),
		mongox.Index("scheduled", false, "scheduled"),
		mongox.Index("revPending", false, "revPending"),
		mongox.Index("draftTagsIds", false, "draft.tagsIds"),
		mongox.Index("draftFileId", false, "draft.file.id"),
		mongox.Index("draftImagesIds", false, "draft.imagesIds"),
		idemstore.KeyIndex(), idemstore.ExpiryIndex(),
	); err != nil {
		return err
	}
	if err := mongox.EnsureIndexes(ctx, s.revs, mongox.Index("documentVersion", true, "documentId", "version")); err != nil {
		return err
	}
	for _, id := range []string{counterID, horizonID} {
		if _, err := s.meta.InsertOne(ctx, bson.M{"_id": id, "n": int64(0)}); err != nil && !mongo.IsDuplicateKeyError(err) {
			return fmt.Errorf("sequence %s: %w", id, err)
		}
	}
	if _, err := s.Counter(ctx); err != nil {
		return err
	}
	n, err := s.docs.CountDocuments(ctx, bson.M{"seq": absent})
	if err != nil || n == 0 {
		return err
	}
	seq, err := s.next(ctx)
	if err != nil {
		return err
	}
	_, err = s.docs.UpdateMany(ctx, bson.M{"seq": absent}, bson.M{"$set": bson.M{"seq": seq}})
	return err
}

var absent = bson.M{"$exists": false}

type fileDoc struct {
	ID   string `bson:"id"`
	Name string `bson:"name"`
}

type tagSinceDoc struct {
	ID string    `bson:"id"`
	At time.Time `bson:"at"`
}

type holdDoc struct {
	Token string    `bson:"token"`
	C0    int64     `bson:"c0"`
	At    time.Time `bson:"at"`
	Tags  []string  `bson:"tags"`
	Media []string  `bson:"media"`
}

type doc struct {
	ID        string        `bson:"_id"`
	Seq       int64         `bson:"seq"`
	Title     string        `bson:"title"`
	Type      string        `bson:"type"`
	URL       string        `bson:"url,omitempty"`
	TagsIDs   []string      `bson:"tagsIds"`
	TagSince  []tagSinceDoc `bson:"tagSince,omitempty"`
	Related   []string      `bson:"relatedIds,omitempty"`
	Content   string        `bson:"content,omitempty"`
	Sources   []string      `bson:"sources,omitempty"`
	ImagesIDs []string      `bson:"imagesIds,omitempty"`
	File      *fileDoc      `bson:"file,omitempty"`
	IsDeleted bool          `bson:"isDeleted"`
	CreatedAt time.Time     `bson:"createdAt"`
	UpdatedAt time.Time     `bson:"updatedAt"`
	DeletedAt *time.Time    `bson:"deletedAt,omitempty"`
	CreatedBy string        `bson:"createdBy,omitempty"`
	UpdatedBy string        `bson:"updatedBy,omitempty"`
	DeletedBy string        `bson:"deletedBy,omitempty"`
	DeletedSq int64         `bson:"deletedSeq,omitempty"`
	PurgedAt  *time.Time    `bson:"purgedAt,omitempty"`
	Pending   *holdDoc      `bson:"pending,omitempty"`
	Held      bool          `bson:"held,omitempty"` // with pending: an equality the test database can index
	Editorial editorialDoc  `bson:",inline"`        // revisions.go
}

// optional are the fields a document may lack; a commit unsets the ones
// the new state does not have (and refsAt, kept by earlier versions).
var optional = []string{"url", "tagSince", "relatedIds", "content", "sources", "imagesIds", "file", "deletedAt",
	"createdBy", "updatedBy", "deletedBy", "deletedSeq", "purgedAt", "refsAt",
	"version", "change", "revPending", "status", "draft", "publishedAt", "publishAt", "unpublishAt", "scheduled"}

func toDoc(d document.Document) doc {
	out := doc{
		ID: d.ID, Seq: d.Seq, Title: d.Title, Type: string(d.Type), URL: d.URL, TagsIDs: orEmpty(d.TagsIDs),
		Content: d.Content, IsDeleted: d.IsDeleted, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
		CreatedBy: d.CreatedBy, UpdatedBy: d.UpdatedBy, DeletedBy: d.DeletedBy, DeletedSq: d.DeletedSeq,
		Related: d.RelatedIDs,
	}
	if d.Type.Inline() {
		out.Sources, out.ImagesIDs = orEmpty(d.Sources), orEmpty(d.ImagesIDs)
	}
	if d.File != nil {
		out.File = &fileDoc{ID: d.File.ID, Name: d.File.Name}
	}
	if d.Purged() {
		out.PurgedAt = &d.PurgedAt
	}
	for _, id := range d.TagsIDs {
		if at, ok := d.TagSince[id]; ok {
			out.TagSince = append(out.TagSince, tagSinceDoc{ID: id, At: at})
		}
	}
	if !d.DeletedAt.IsZero() {
		out.DeletedAt = &d.DeletedAt
	}
	out.Editorial = toEditorial(d)
	return out
}

func (d doc) domain() document.Document {
	out := document.Document{
		ID: d.ID, Seq: d.Seq, Title: d.Title, Type: document.Type(d.Type), URL: d.URL, TagsIDs: orEmpty(d.TagsIDs),
		Content: d.Content, IsDeleted: d.IsDeleted, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(),
		CreatedBy: d.CreatedBy, UpdatedBy: d.UpdatedBy, DeletedBy: d.DeletedBy, DeletedSeq: d.DeletedSq,
		RelatedIDs: orEmpty(d.Related),
	}
	if d.PurgedAt != nil {
		out.PurgedAt = d.PurgedAt.UTC()
	}
	if out.Type.Inline() {
		out.Sources, out.ImagesIDs = orEmpty(d.Sources), orEmpty(d.ImagesIDs)
	}
	if d.File != nil {
		out.File = &document.File{ID: d.File.ID, Name: d.File.Name}
	}
	if len(d.TagSince) > 0 {
		out.TagSince = make(map[string]time.Time, len(d.TagSince))
		for _, t := range d.TagSince {
			out.TagSince[t.ID] = t.At.UTC()
		}
	}
	if d.DeletedAt != nil {
		out.DeletedAt = d.DeletedAt.UTC()
	}
	d.Editorial.into(&out)
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// withoutOutbox leaves the pending events out of reads.
var withoutOutbox = bson.M{outbox.Field: 0}

// Get implements document.Store. A document being created (seq 0) does
// not exist yet, and a purged one no longer does.
func (s *Store) Get(ctx context.Context, id string) (document.Document, error) {
	var d doc
	err := s.docs.FindOne(ctx, bson.M{"_id": id, "seq": bson.M{"$gt": 0}, "purgedAt": absent},
		options.FindOne().SetProjection(withoutOutbox)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return document.Document{}, document.ErrNotFound
	}
	if err != nil {
		return document.Document{}, err
	}
	return d.domain(), nil
}

func (s *Store) find(ctx context.Context, filter any, opts *options.FindOptionsBuilder) ([]document.Document, error) {
	cur, err := s.docs.Find(ctx, filter, opts)
	if err != nil {
		return nil, err
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]document.Document, len(docs))
	for i, d := range docs {
		out[i] = d.domain()
	}
	return out, nil
}

// Naming implements document.Store.
func (s *Store) Naming(ctx context.Context, refs document.Refs) ([]string, error) {
	or := namingFilter(refs, true)
	if len(or) == 0 {
		return nil, nil
	}
	return s.ids(ctx, bson.M{"$or": or})
}

// namingFilter is the $or of documents naming refs; with pending, also of
// documents held by a write that may make them name refs.
func namingFilter(refs document.Refs, pending bool) bson.A {
	var or bson.A
	if len(refs.Tags) > 0 {
		// A draft's tags are the document's own (pending changes): always named.
		or = append(or, bson.M{"tagsIds": bson.M{"$in": refs.Tags}}, bson.M{"draft.tagsIds": bson.M{"$in": refs.Tags}})
		if pending {
			or = append(or, bson.M{"pending.tags": bson.M{"$in": refs.Tags}})
		}
	}
	if len(refs.Media) > 0 {
		or = append(or, bson.M{"file.id": bson.M{"$in": refs.Media}}, bson.M{"imagesIds": bson.M{"$in": refs.Media}},
			bson.M{"draft.file.id": bson.M{"$in": refs.Media}}, bson.M{"draft.imagesIds": bson.M{"$in": refs.Media}})
		if pending {
			or = append(or, bson.M{"pending.media": bson.M{"$in": refs.Media}})
		}
	}
	return or
}

// Pinning implements document.Store.
func (s *Store) Pinning(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return s.ids(ctx, bson.M{"$or": bson.A{bson.M{"relatedIds": bson.M{"$in": ids}}, bson.M{"draft.relatedIds": bson.M{"$in": ids}}}})
}

// MediaUsers implements document.Store: live documents using the media,
// and held ones that use it or may (a held document in the trash may be
// being restored).
func (s *Store) MediaUsers(ctx context.Context, mediaID string) ([]string, error) {
	uses := bson.A{bson.M{"file.id": mediaID}, bson.M{"imagesIds": mediaID},
		bson.M{"draft.file.id": mediaID}, bson.M{"draft.imagesIds": mediaID}} // pending changes use it too
	return s.ids(ctx, bson.M{"$or": bson.A{
		bson.M{"isDeleted": false, "seq": bson.M{"$gt": 0}, "$or": uses},
		bson.M{"held": true, "$or": append(uses, bson.M{"pending.media": mediaID})},
	}})
}

func (s *Store) ids(ctx context.Context, filter bson.M) ([]string, error) {
	cur, err := s.docs.Find(ctx, filter, options.Find().SetProjection(bson.M{"_id": 1}))
	if err != nil {
		return nil, err
	}
	return decodeIDs(ctx, cur)
}

func decodeIDs(ctx context.Context, cur *mongo.Cursor) ([]string, error) {
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids, nil
}

// Counter returns the sequence counter: the highest seq handed out.
func (s *Store) Counter(ctx context.Context) (int64, error) {
	n, err := s.metaValue(ctx, counterID)
	if err == nil {
		s.saw(n)
	}
	return n, err
}

// Horizon returns the highest DeletedSeq of the purged documents that are
// gone for good: a sync cursor below it may have missed one's removal.
func (s *Store) Horizon(ctx context.Context) (int64, error) { return s.metaValue(ctx, horizonID) }

func (s *Store) metaValue(ctx context.Context, id string) (int64, error) {
	var m struct {
		N int64 `bson:"n"`
	}
	err := s.meta.FindOne(ctx, bson.M{"_id": id}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return m.N, err
}

// Present returns which of ids are documents not purged (replicas drop the
// others from memory).
func (s *Store) Present(ctx context.Context, ids []string) ([]string, error) {
	return s.ids(ctx, bson.M{"_id": bson.M{"$in": ids}, "purgedAt": absent, "seq": bson.M{"$gt": 0}})
}

// Trashed returns up to limit documents deleted before the given time and
// not purged yet, the earliest deleted first.
func (s *Store) Trashed(ctx context.Context, before time.Time, limit int) ([]string, error) {
	cur, err := s.docs.Find(ctx, bson.M{"isDeleted": true, "deletedAt": bson.M{"$lt": before}, "purgedAt": absent, "seq": bson.M{"$gt": 0}},
		options.Find().SetProjection(bson.M{"_id": 1}).SetSort(bson.D{{Key: "deletedSeq", Value: 1}}).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	return decodeIDs(ctx, cur)
}

// Sweep removes for good the tombstones of purged documents (whose
// Idempotency-Key, if any, expired) whose
// event is published: it first raises the horizon to their DeletedSeq
// (and moves the counter, so that replicas read it), then deletes them, so
// a sync cursor that could miss their removal is expired before they are
// gone. It returns how many it removed;
// idempotent and safe on several replicas (the relay runs it after
// publishing).
func (s *Store) Sweep(ctx context.Context) (int, error) {
	// A tombstone whose Idempotency-Key lives stays: the key's retry must
	// find it, not create the document again (keyed.go).
	published := bson.M{"purgedAt": bson.M{"$exists": true}, "$and": bson.A{
		bson.M{"$or": bson.A{bson.M{outbox.CountField: absent}, bson.M{outbox.CountField: 0}}},
		idemstore.Unstamped(time.Now()),
	}}
	cur, err := s.docs.Find(ctx, published, options.Find().SetProjection(bson.M{"_id": 1, "deletedSeq": 1}).SetLimit(500))
	if err != nil {
		return 0, err
	}
	var stubs []doc
	if err := cur.All(ctx, &stubs); err != nil {
		return 0, err
	}
	if len(stubs) == 0 {
		return 0, nil
	}
	ids := make([]string, len(stubs))
	var horizon int64
	for i, d := range stubs {
		ids[i], horizon = d.ID, max(horizon, d.DeletedSq)
	}
	if _, err := s.meta.UpdateOne(ctx, bson.M{"_id": horizonID, "n": bson.M{"$lt": horizon}}, bson.M{"$set": bson.M{"n": horizon}}); err != nil {
		return 0, err
	}
	// A number of the counter that names no document: replicas, which look
	// again when the counter moves, read the new horizon. Moved even when
	// the horizon was already as high: a sweep that raised it and stopped
	// before this step (MongoDB gone between the two writes, a killed
	// process) left replicas on the old one until the next write, refusing
	// the cursors of replicas that had read the new one.
	if _, err := s.next(ctx); err != nil {
		return 0, err
	}
	// Their revisions go with them, before the tombstones (which a crash
	// between leaves for the next sweep).
	if _, err := s.revs.DeleteMany(ctx, bson.M{"documentId": bson.M{"$in": ids}}); err != nil {
		return 0, err
	}
	published["_id"] = bson.M{"$in": ids}
	res, err := s.docs.DeleteMany(ctx, published)
	if err != nil {
		return 0, err
	}
	return int(res.DeletedCount), nil
}

// Stable returns the stable point of the sequence (see the package
// comment): every write with a seq up to it is visible to reads made after
// this call. It can be below an earlier answer (a hold with an old c0);
// callers keep the highest they have seen.
func (s *Store) Stable(ctx context.Context) (int64, error) {
	c, err := s.Counter(ctx)
	if err != nil {
		return 0, err
	}
	cur, err := s.docs.Find(ctx, bson.M{"held": true}, options.Find().SetProjection(bson.M{"pending.c0": 1}))
	if err != nil {
		return 0, err
	}
	var held []doc
	if err := cur.All(ctx, &held); err != nil {
		return 0, err
	}
	stable := c
	for _, h := range held {
		if h.Pending != nil {
			stable = min(stable, h.Pending.C0)
		}
	}
	return stable, nil
}

// Changes returns up to limit documents after the position (seq, id), in
// (seq, _id) order: the documents as they are now, deleted ones included.
// Read after Stable, they hold every change up to the stable point. Writes
// of many documents at once share a seq, hence the id in the position; an
// empty id means every document at seq was read.
func (s *Store) Changes(ctx context.Context, afterSeq int64, afterID string, limit int) ([]document.Document, error) {
	filter := bson.M{"seq": bson.M{"$gt": afterSeq}}
	if afterID != "" {
		filter = bson.M{"$or": bson.A{filter, bson.M{"seq": afterSeq, "_id": bson.M{"$gt": afterID}}}}
	}
	return s.find(ctx, filter, options.Find().
		SetProjection(withoutOutbox).
		SetSort(bson.D{{Key: "seq", Value: 1}, {Key: "_id", Value: 1}}).
		SetLimit(int64(limit)))
}

func (s *Store) saw(n int64) {
	for {
		cur := s.seen.Load()
		if n <= cur || s.seen.CompareAndSwap(cur, n) {
			return
		}
	}
}

// next takes the next number of the counter.
func (s *Store) next(ctx context.Context) (int64, error) {
	var m struct {
		N int64 `bson:"n"`
	}
	err := s.meta.FindOneAndUpdate(ctx, bson.M{"_id": counterID}, bson.M{"$inc": bson.M{"n": int64(1)}},
		options.FindOneAndUpdate().SetReturnDocument(options.After)).Decode(&m)
	if err != nil {
		return 0, fmt.Errorf("sequence counter: %w", err)
	}
	s.saw(m.N)
	return m.N, nil
}

// hold returns the pending field of a new hold.
func (s *Store) hold(adds document.Refs) holdDoc {
	return holdDoc{Token: newToken(), C0: s.seen.Load(), At: s.now(), Tags: orEmpty(adds.Tags), Media: orEmpty(adds.Media)}
}

// Create implements document.Store.
func (s *Store) Create(ctx context.Context, id string, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	return s.create(ctx, id, nil, adds, fn)
}

// CreateKeyed implements document.Store (keyed.go).
func (s *Store) CreateKeyed(ctx context.Context, id string, key document.Key, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	return s.create(ctx, id, &key, adds, fn)
}

// create inserts the placeholder of id (with key, if any, under the
// unique index idemKey: it collides with the document an earlier attempt
// made, even one committed after its answer was lost), then commits fn's
// document into it. The commit's $set leaves the key in place.
func (s *Store) create(ctx context.Context, id string, key *document.Key, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	for attempt := 0; ; attempt++ {
		h := s.hold(adds)
		placeholder := bson.M{"_id": id, "seq": int64(0), "pending": h, "held": true}
		if key != nil {
			idemstore.Stamp{Key: key.ID, Fingerprint: key.Fingerprint, ExpiresAt: key.ExpiresAt}.Into(placeholder)
		}
		if _, err := s.docs.InsertOne(ctx, placeholder); err != nil {
			if key != nil && mongo.IsDuplicateKeyError(err) {
				return document.Document{}, document.ErrKeyTaken
			}
			return document.Document{}, err
		}
		d := document.Document{ID: id}
		if err := fn(&d); err != nil {
			s.abandon(ctx, id, h.Token)
			return document.Document{}, err
		}
		if !adds.Covers(d.Refs()) {
			s.abandon(ctx, id, h.Token)
			return document.Document{}, fmt.Errorf("document %s: the write adds references it did not hold", id)
		}
		done, err := s.commit(ctx, h.Token, []change{{before: document.Document{ID: id}, after: d}})
		if err != nil {
			if len(done) == 0 {
				s.abandon(ctx, id, h.Token)
			}
			return document.Document{}, err
		}
		if len(done) == 1 {
			return done[0], nil
		}
		if attempt == 2 { // the hold was swept each time: the closure is too slow
			return document.Document{}, document.ErrConflict
		}
	}
}

// keyField holds the Idempotency-Key a document was created under, unique
// among the documents that have one (idemstore.KeyIndex).
const keyField = idemstore.KeyField

// keyedDoc is a document with the key it was created under.
type keyedDoc struct {
	Doc   doc             `bson:",inline"`
	Stamp idemstore.Stamp `bson:",inline"`
}

// Keyed implements document.Store.
func (s *Store) Keyed(ctx context.Context, keyID string) (document.Document, document.Key, bool, error) {
	var d keyedDoc
	err := s.docs.FindOne(ctx, bson.M{keyField: keyID}, options.FindOne().SetProjection(withoutOutbox)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return document.Document{}, document.Key{}, false, document.ErrNotFound
	}
	if err != nil {
		return document.Document{}, document.Key{}, false, err
	}
	key := document.Key{ID: keyID, Fingerprint: d.Stamp.Fingerprint, ExpiresAt: d.Stamp.ExpiresAt}
	return d.Doc.domain(), key, d.Doc.Seq == 0, nil
}

// DropKey implements document.Store.
func (s *Store) DropKey(ctx context.Context, keyID string, seq int64, now time.Time) error {
	expired := idemstore.Expired(now)
	expired[keyField], expired["seq"], expired["held"] = keyID, seq, absent
	_, err := s.docs.UpdateOne(ctx, expired, idemstore.Unstamp())
	return err
}

// dropExpiredKeys takes the expired Idempotency-Keys off the documents
// holding no write's hold (as DropKey), at most once a keySweepEvery per
// replica (idemstore.KeySweep), though ReleaseStale runs every few seconds.
func (s *Store) dropExpiredKeys(ctx context.Context) error {
	return s.keys.Run(ctx, s.now(), bson.M{"held": absent}, s.docs)
}

// keySweepEvery is how often dropExpiredKeys sweeps.
const keySweepEvery = time.Minute

// abandon removes a document being created whose write failed.
func (s *Store) abandon(ctx context.Context, id, token string) {
	ctx, cancel := cleanup(ctx)
	defer cancel()
	if _, err := s.docs.DeleteOne(ctx, bson.M{"_id": id, "seq": int64(0), "pending.token": token}); err != nil {
		s.log.WarnContext(ctx, "a failed create left its placeholder; ReleaseStale removes it", "document_id", id, "error", err)
	}
}

// Update implements document.Store.
func (s *Store) Update(ctx context.Context, id string, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	out, err := s.update(ctx, byID{ids: []string{id}}, adds, hooks{}, fn)
	if err != nil {
		return document.Document{}, err
	}
	d, ok := out[id]
	if !ok {
		return document.Document{}, document.ErrNotFound
	}
	return d.doc, nil
}

// UpdateEach implements document.Store.
func (s *Store) UpdateEach(ctx context.Context, ids []string, fn func(*document.Document) error) ([]document.Document, error) {
	out, err := s.update(ctx, byID{ids: ids}, document.Refs{}, hooks{}, fn)
	var changed []document.Document
	for _, id := range ids {
		if r, ok := out[id]; ok && r.changed {
			changed = append(changed, r.doc)
		}
	}
	return changed, err
}

// UpdateNaming implements document.Store: each round holds, with one
// update, every free document naming refs, reads them and those held by
// other writes that name or may name refs (busy: the next round takes
// them), then calls look, fn on each, and prepare before the commit. Its
// cost in database operations does not grow with the number of documents
// (commit groups the changes that only drop tags).
func (s *Store) UpdateNaming(ctx context.Context, refs document.Refs, look func(context.Context) error, fn func(*document.Document) error, prepare func(context.Context) error) ([]document.Document, error) {
	filter := namingFilter(refs, false)
	if filter == nil {
		return nil, nil
	}
	out, err := s.update(ctx, byNaming{refs: refs}, document.Refs{}, hooks{look: look, prepare: prepare}, fn)
	var changed []document.Document
	for _, r := range out {
		if r.changed {
			changed = append(changed, r.doc)
		}
	}
	slices.SortFunc(changed, func(a, b document.Document) int { return strings.Compare(a.ID, b.ID) })
	return changed, err
}

type result struct {
	doc     document.Document
	changed bool
}

// selection is which documents a write's round holds and reads.
type selection interface {
	// hold is the filter of the documents to hold (free ones are added).
	hold() bson.M
	// read is the filter of the documents the round reads: those token
	// holds, and those it could not hold (busy).
	read(token string) bson.M
	// again is the selection of the next round, given the busy ids.
	again(busy []string) selection
}

// byID selects documents by id.
type byID struct{ ids []string }

func (b byID) hold() bson.M {
	return byIDs(b.ids, bson.M{"seq": bson.M{"$gt": 0}, "purgedAt": absent})
}
func (b byID) read(string) bson.M            { return byIDs(b.ids, bson.M{}) }
func (b byID) again(busy []string) selection { return byID{ids: busy} }

// byNaming selects the documents that name refs (Naming).
type byNaming struct{ refs document.Refs }

func (b byNaming) hold() bson.M {
	return bson.M{"$or": namingFilter(b.refs, false), "seq": bson.M{"$gt": 0}, "purgedAt": absent}
}

// read takes the documents naming refs whoever holds them, free ones too:
// one another write released between this round's hold and this read was
// neither held nor busy, and the round ended without it (a tag deletion
// left a document its tag: TestATagDeletionWaitingForAWriteRecordsALaterChange
// under make test's load). readHeld counts a free one busy: the next round
// holds it.
func (b byNaming) read(token string) bson.M {
	return bson.M{"$or": bson.A{bson.M{"pending.token": token}, bson.M{"$or": namingFilter(b.refs, true)}}}
}
func (b byNaming) again([]string) selection { return b }

// hooks are what a round calls besides fn: look once it holds documents,
// prepare once fn ran on them and before the commit. Either may be nil.
type hooks struct {
	look, prepare func(context.Context) error
}

// update runs rounds until every selected document is written (or left
// unchanged), missing, or busyWait has passed while others hold some.
func (s *Store) update(ctx context.Context, sel selection, adds document.Refs, h hooks, fn func(*document.Document) error) (map[string]result, error) {
	out := map[string]result{}
	wait, deadline := 2*time.Millisecond, time.Now().Add(busyWait)
	for {
		busy, err := s.round(ctx, sel, adds, h, fn, out)
		if err != nil || len(busy) == 0 {
			return out, err
		}
		if time.Now().After(deadline) {
			return out, document.ErrConflict
		}
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 100*time.Millisecond)
		sel = sel.again(busy)
	}
}

type change struct {
	before, after document.Document
}

// round holds what it can of sel, calls look (after the hold, so what it
// asks other services comes after any write it could race: refs.go), runs
// fn on each held document, commits the changed ones and releases the
// others. It records finished documents in out and returns the ids to try
// again (held by another write, or whose hold was taken over before the
// commit). Missing ids are left out.
func (s *Store) round(ctx context.Context, sel selection, adds document.Refs, hk hooks, fn func(*document.Document) error, out map[string]result) (busy []string, err error) {
	h := s.hold(adds)
	free := bson.A{bson.M{"pending": absent}, bson.M{"pending.at": bson.M{"$lt": h.At.Add(-holdTTL)}}}
	filter := sel.hold()
	filter["$and"] = bson.A{bson.M{"$or": free}}
	if _, err := s.docs.UpdateMany(ctx, filter, bson.M{"$set": bson.M{"pending": h, "held": true}}); err != nil {
		return nil, err
	}
	held, busy, err := s.readHeld(ctx, sel, h.Token)
	if err == nil && hk.look != nil && len(held) > 0 {
		err = hk.look(ctx)
	}
	if err != nil {
		s.releaseToken(ctx, h.Token)
		return nil, err
	}
	changes, unchanged, err := s.apply(held, adds, fn, out)
	if err == nil && hk.prepare != nil && len(changes) > 0 {
		err = hk.prepare(ctx)
	}
	if err != nil {
		s.releaseToken(ctx, h.Token)
		return nil, err
	}
	if len(unchanged) > 0 {
		s.release(ctx, unchanged, h.Token)
	}
	if len(changes) == 0 {
		return busy, nil
	}
	done, err := s.commit(ctx, h.Token, changes)
	for _, d := range done {
		out[d.ID] = result{doc: d, changed: true}
	}
	var unwritten []string
	for _, c := range changes {
		if r, ok := out[c.after.ID]; !ok || !r.changed || r.doc.Seq != c.after.Seq {
			unwritten = append(unwritten, c.after.ID)
		}
	}
	if err != nil {
		s.release(ctx, unwritten, h.Token)
		return nil, err
	}
	return append(busy, unwritten...), nil // unwritten: the hold was taken over; again
}

// readHeld reads what a round selected: the documents token holds, and the
// ids of those another write holds.
func (s *Store) readHeld(ctx context.Context, sel selection, token string) (held []doc, busy []string, err error) {
	cur, err := s.docs.Find(ctx, sel.read(token), options.Find().SetProjection(withoutOutbox))
	if err != nil {
		return nil, nil, err
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, nil, err
	}
	for _, d := range docs {
		switch {
		case d.PurgedAt != nil:
			// gone for good: missing
		case d.Pending == nil || d.Pending.Token != token:
			busy = append(busy, d.ID)
		default:
			held = append(held, d)
		}
	}
	return held, busy, nil
}

// apply runs fn on each held document: the changes to commit, and the ids
// left unchanged (recorded in out unless an earlier round changed them).
func (s *Store) apply(held []doc, adds document.Refs, fn func(*document.Document) error, out map[string]result) (changes []change, unchanged []string, err error) {
	for _, d := range held {
		before := d.domain()
		after := before.Clone()
		switch err := fn(&after); {
		case errors.Is(err, document.ErrUnchanged):
			unchanged = append(unchanged, d.ID)
			if _, done := out[d.ID]; !done {
				out[d.ID] = result{doc: before}
			}
		case err != nil:
			return nil, nil, err
		case !refsUnion(adds, before.Refs()).Covers(after.Refs()):
			return nil, nil, fmt.Errorf("document %s: the write adds references it did not hold", d.ID)
		default:
			changes = append(changes, change{before: before, after: after})
		}
	}
	return changes, unchanged, nil
}

func refsUnion(a, b document.Refs) document.Refs {
	return document.Refs{Tags: append(slices.Clone(a.Tags), b.Tags...), Media: append(slices.Clone(a.Media), b.Media...)}
}

// commit takes the next number of the counter and writes the changes
// under it, each only if its hold is still token's; it returns the
// documents written. Documents whose hold was taken over are not; on an
// error, the caller releases (or abandons) the ones not written.
//
// The write is decided once the closure has run, so the commit runs to its
// end even when the caller's context ends (its client left, its time
// budget ran out): cut short between its steps, it would leave documents
// held, and the stable point stuck, until ReleaseStale.
func (s *Store) commit(ctx context.Context, token string, changes []change) ([]document.Document, error) {
	ctx, cancel := committing(ctx)
	defer cancel()
	ids := make([]string, len(changes))
	for i, c := range changes {
		ids[i] = c.after.ID
	}
	seq, err := s.next(ctx)
	if err != nil {
		return nil, err
	}
	for i := range changes {
		c := &changes[i]
		c.after.Seq = seq
		switch {
		case !c.after.IsDeleted:
			c.after.DeletedSeq = 0
		case !c.before.IsDeleted:
			c.after.DeletedSeq = seq
		}
	}
	models, err := s.models(ctx, token, seq, changes)
	if err != nil {
		return nil, err
	}
	res, err := s.docs.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if err != nil {
		// Some may have been written: the ones now at seq are.
		if written, rerr := s.at(ctx, ids, seq); rerr == nil {
			return pick(changes, written), err
		}
		return nil, err
	}
	if int(res.MatchedCount) == len(changes) {
		out := make([]document.Document, len(changes))
		for i, c := range changes {
			out[i] = c.after
		}
		return out, nil
	}
	written, err := s.at(ctx, ids, seq)
	return pick(changes, written), err
}

// models are the statements of a commit: one per change, but one for all
// the changes that only drop the same tags and record the same change (a
// tag deletion's), so that a deletion costs one statement whatever the
// number of documents naming the tag.
func (s *Store) models(ctx context.Context, token string, seq int64, changes []change) ([]mongo.WriteModel, error) {
	var models []mongo.WriteModel
	groups := map[string]*tagDrop{}
	var order []string
	for _, c := range changes {
		if g, ok := tagDropOf(c.before, c.after); ok {
			key := g.key()
			if groups[key] == nil {
				groups[key], order = g, append(order, key)
			}
			groups[key].add(c.before)
			continue
		}
		update, err := s.updateOf(ctx, c.before, c.after)
		if err != nil {
			return nil, err
		}
		models = append(models, mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": c.after.ID, "pending.token": token}).SetUpdate(update))
	}
	for _, key := range order {
		models = append(models, groups[key].models(token, seq)...)
	}
	return models, nil
}

// idChunk bounds the ids one statement names: a statement must stay under
// MongoDB's 16 MB, which a tag deletion's grouped update passed at about
// 480,000 documents (a 22-character id takes 34 bytes in $in's array).
// 10,000 ids are about 0.35 MB.
const idChunk = 10000

// tagDrop is documents whose change only removes tags (from the live
// version, the pending changes or both) and, as every write since
// revisions, takes the next version and records who, when and why.
type tagDrop struct {
	tags, draftTags []string
	version         bool       // the version goes up by one
	change          *changeDoc // set when the change record is new
	revPending      bool       // the revision mark is set
	ids             []string
	since           []tagSinceDoc // live tagSince entries to pull
	draftSince      []tagSinceDoc
}

func (g *tagDrop) key() string {
	return fmt.Sprintf("%q|%q|%v|%v|%v", g.tags, g.draftTags, g.version, g.change, g.revPending)
}

func (g *tagDrop) add(before document.Document) {
	g.ids = append(g.ids, before.ID)
	g.since = appendSince(g.since, g.tags, before.TagSince)
	if before.Draft != nil {
		g.draftSince = appendSince(g.draftSince, g.draftTags, before.Draft.TagSince)
	}
}

func appendSince(list []tagSinceDoc, tags []string, since map[string]time.Time) []tagSinceDoc {
	for _, id := range tags {
		if at, ok := since[id]; ok {
			e := tagSinceDoc{ID: id, At: at}
			if !slices.Contains(list, e) {
				list = append(list, e)
			}
		}
	}
	return list
}

// models pull the tags, and the entries of tagSince that name them (the
// exact values read: $pull with a condition is not in the test database),
// from each document of the group that token holds, as the change's
// commit (updateOf) would: new seq, next version, the change record, hold
// ended, UpdatedAt kept; one statement per idChunk ids.
func (g *tagDrop) models(token string, seq int64) []mongo.WriteModel {
	pull := bson.M{}
	if len(g.tags) > 0 {
		pull["tagsIds"] = g.tags
	}
	if len(g.since) > 0 {
		pull["tagSince"] = g.since
	}
	if len(g.draftTags) > 0 {
		pull["draft.tagsIds"] = g.draftTags
	}
	if len(g.draftSince) > 0 {
		pull["draft.tagSince"] = g.draftSince
	}
	set := bson.M{"seq": seq}
	if g.change != nil {
		set["change"] = *g.change
	}
	if g.revPending {
		set["revPending"] = true
	}
	update := bson.M{"$pullAll": pull, "$set": set, "$unset": bson.M{"pending": "", "held": "", "refsAt": ""}}
	if g.version {
		update["$inc"] = bson.M{"version": int64(1)}
	}
	var models []mongo.WriteModel
	for ids := range slices.Chunk(g.ids, idChunk) {
		models = append(models, mongo.NewUpdateManyModel().
			SetFilter(bson.M{"_id": bson.M{"$in": ids}, "pending.token": token}).
			SetUpdate(update))
	}
	return models
}

// tagDropOf returns the group of a change that is before less some of its
// tags and their TagSince, in the live version or the pending changes,
// with at most the editorial record's own moves (the next version, a new
// change record, the revision mark set); such a change has no events.
func tagDropOf(before, after document.Document) (*tagDrop, bool) {
	g := &tagDrop{tags: dropped(before.TagsIDs, after.TagsIDs)}
	if before.Draft != nil && after.Draft != nil {
		g.draftTags = dropped(before.Draft.TagsIDs, after.Draft.TagsIDs)
	}
	if len(g.tags) == 0 && len(g.draftTags) == 0 {
		return nil, false
	}
	want := before.Clone()
	withoutTags(&want, g.tags, after.TagSince)
	if want.Draft != nil && after.Draft != nil {
		withoutTags(want.Draft, g.draftTags, after.Draft.TagSince)
	}
	want.Seq, want.DeletedSeq = after.Seq, after.DeletedSeq
	switch after.Version {
	case before.Version:
	case before.Version + 1:
		g.version, want.Version = true, after.Version
	default:
		return nil, false
	}
	if after.Change != before.Change {
		g.change, want.Change = &changeDoc{By: after.Change.By, At: after.Change.At, Why: after.Change.Why}, after.Change
	}
	if before.RevisionPending && !after.RevisionPending {
		return nil, false
	}
	g.revPending, want.RevisionPending = after.RevisionPending, after.RevisionPending
	if !reflect.DeepEqual(want, after) {
		return nil, false
	}
	return g, true
}

// dropped returns the ids of before not in after.
func dropped(before, after []string) []string {
	var out []string
	for _, id := range before {
		if !slices.Contains(after, id) {
			out = append(out, id)
		}
	}
	return out
}

// withoutTags removes tags and their TagSince from d; an emptied TagSince
// takes after's form (nil or empty), which the comparison must not see.
func withoutTags(d *document.Document, tags []string, afterSince map[string]time.Time) {
	d.TagsIDs = slices.DeleteFunc(d.TagsIDs, func(id string) bool { return slices.Contains(tags, id) })
	for _, id := range tags {
		delete(d.TagSince, id)
	}
	if len(d.TagSince) == 0 && len(afterSince) == 0 {
		d.TagSince = afterSince
	}
}

// at returns which of ids are at seq.
func (s *Store) at(ctx context.Context, ids []string, seq int64) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	for chunk := range slices.Chunk(ids, idChunk) {
		got, err := s.ids(ctx, bson.M{"_id": bson.M{"$in": chunk}, "seq": seq})
		if err != nil {
			return nil, err
		}
		for _, id := range got {
			out[id] = true
		}
	}
	return out, nil
}

func pick(changes []change, written map[string]bool) []document.Document {
	var out []document.Document
	for _, c := range changes {
		if written[c.after.ID] {
			out = append(out, c.after)
		}
	}
	return out
}

// updateOf is the commit of one change: the new state's fields (not a
// whole-document replace, so the outbox's pending events survive), the end
// of the hold, and the change's events.
func (s *Store) updateOf(ctx context.Context, before, after document.Document) (bson.M, error) {
	raw, err := bson.Marshal(toDoc(after))
	if err != nil {
		return nil, err
	}
	var set bson.M
	if err := bson.Unmarshal(raw, &set); err != nil {
		return nil, err
	}
	delete(set, "_id")
	delete(set, "pending")
	delete(set, "held")
	unset := bson.M{"pending": "", "held": ""}
	for _, f := range optional {
		if _, ok := set[f]; !ok {
			unset[f] = ""
		}
	}
	update := bson.M{"$set": set, "$unset": unset}
	for _, e := range document.Events(before, after) {
		var ev events.Event
		switch e {
		case document.Deleted:
			ev, err = events.New(ctx, Source, events.DocumentDeleted, events.DocumentDeletedData{DocumentID: after.ID}, after.UpdatedAt)
		case document.Purged:
			ev, err = events.New(ctx, Source, events.DocumentPurged, events.DocumentPurgedData{DocumentID: after.ID}, after.PurgedAt)
		case document.Publication:
			ev, err = events.New(ctx, Source, events.DocumentPublished,
				events.DocumentPublishedData{DocumentID: after.ID, Version: after.Version}, after.PublishedAt)
		case document.Unpublication:
			ev, err = events.New(ctx, Source, events.DocumentUnpublished,
				events.DocumentUnpublishedData{DocumentID: after.ID, Version: after.Version}, after.UpdatedAt)
		}
		if err != nil {
			return nil, err
		}
		if err := outbox.Add(update, ev); err != nil {
			return nil, err
		}
	}
	return update, nil
}

// release ends token's holds on ids, leaving the documents as they were.
func (s *Store) release(ctx context.Context, ids []string, token string) {
	ctx, cancel := cleanup(ctx)
	defer cancel()
	for chunk := range slices.Chunk(ids, idChunk) {
		if _, err := s.docs.UpdateMany(ctx, byIDs(chunk, bson.M{"pending.token": token}),
			bson.M{"$unset": bson.M{"pending": "", "held": ""}}); err != nil {
			s.log.WarnContext(ctx, "a hold was not released; ReleaseStale does it", "documents", len(ids), "error", err)
			return
		}
	}
}

// releaseToken ends every hold of token, leaving the documents as they were.
func (s *Store) releaseToken(ctx context.Context, token string) {
	ctx, cancel := cleanup(ctx)
	defer cancel()
	if _, err := s.docs.UpdateMany(ctx, bson.M{"held": true, "pending.token": token},
		bson.M{"$unset": bson.M{"pending": "", "held": ""}}); err != nil {
		s.log.WarnContext(ctx, "holds were not released; ReleaseStale does it", "error", err)
	}
}

// ReleaseStale ends holds older than holdTTL, whose writers died (a crash,
// a lost connection): documents held go back to what they were, documents
// being created that never were are removed. Until then the stable point
// cannot pass them. It also takes expired Idempotency-Keys off documents
// (dropExpiredKeys); it counts the holds. Idempotent, safe on several
// replicas.
func (s *Store) ReleaseStale(ctx context.Context) (int64, error) {
	stale := bson.M{"$lt": s.now().Add(-holdTTL)}
	// held: the indexed field, so that the job, run every few seconds by
	// every replica, reads the holds only, not the collection.
	a, err := s.docs.DeleteMany(ctx, bson.M{"held": true, "seq": int64(0), "pending.at": stale})
	if err != nil {
		return 0, err
	}
	b, err := s.docs.UpdateMany(ctx, bson.M{"held": true, "seq": bson.M{"$gt": 0}, "pending.at": stale},
		bson.M{"$unset": bson.M{"pending": "", "held": ""}})
	if err != nil {
		return a.DeletedCount, err
	}
	return a.DeletedCount + b.ModifiedCount, s.dropExpiredKeys(ctx)
}

// byIDs adds the ids to filter: one id as an equality, which the test
// database (FerretDB) sends to its index where $in it evaluates over the
// whole collection; the same query on MongoDB.
func byIDs(ids []string, filter bson.M) bson.M {
	if len(ids) == 1 {
		filter["_id"] = ids[0]
	} else {
		filter["_id"] = bson.M{"$in": ids}
	}
	return filter
}

// cleanupTimeout bounds the writes that finish or undo a write once its
// caller's context may be done.
const cleanupTimeout = 10 * time.Second

// cleanup is a context for undoing after a failure: it runs even when the
// request's context is done.
func cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// committing is a context for a commit: not ended by the caller's, and
// bounded by cleanupTimeout or the caller's deadline if that is later (an
// event handler's batch commit of many documents).
func committing(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(cleanupTimeout)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
