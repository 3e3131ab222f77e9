// Package mongostore keeps the catalog's documents in MongoDB (collection
// documents), the change sequence's counter (collection meta), the
// revisions and the outbox. bson shapes live only here.
//
// # One write path: read, decide, then one transaction
//
// Every write (Create, Update, UpdateEach, UpdateNaming) reads the
// documents, runs its closure on them outside any transaction (the rules,
// and any lookups in other services: no document is held across such a
// call), then commits in one transaction that checks the documents are
// still as read, takes the next number of the counter, and writes the
// documents, numbered, with their events (the outbox). If a document
// changed meanwhile nothing is written and the write runs again.
//
// # A sequence no reader can skip
//
// The counter's increment commits with the write it numbers, and two
// writes both increment the one counter document, so on MongoDB they
// conflict and one waits for, or retries after, the other: numbers are
// handed out in commit order. A reader that has seen the counter at n
// therefore sees every write numbered up to n: the counter is the stable
// point, on which the replicas' memory and the sync cursor rest.
package mongostore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/services/catalog/internal/document"
)

// Source is the CloudEvents source of the catalog's events.
const Source = "/catalog"

// Store implements document.Store.
type Store struct {
	docs *mongo.Collection
	meta *mongo.Collection
	revs *mongo.Collection // revisions.go
	// guards are the reference guards (guards.go).
	guards *mongo.Collection
	ob     *outbox.Outbox
	// keep is how many revisions a document keeps (0: all), trimmed in
	// the write's transaction.
	keep int64
	// public renders a document's public detail for its events (nil: the
	// events carry none).
	public func(document.Document) json.RawMessage
	// client runs the transactions.
	client *mongo.Client
	log    *slog.Logger
	now    func() time.Time
}

var _ document.Store = (*Store)(nil)

// New returns a Store on db. Call EnsureIndexes once at start-up.
//
// Every read goes to the primary, whatever MONGODB_URI says
// (readPreference=secondaryPreferred, say, to spread reads): the stable
// point is sound only over reads that see every write acknowledged before
// them, which a lagging secondary does not.
func New(db *mongo.Database, log *slog.Logger) *Store {
	primary := options.Collection().SetReadPreference(readpref.Primary())
	return &Store{docs: db.Collection("documents", primary), meta: db.Collection("meta", primary),
		revs: db.Collection("revisions", primary), guards: db.Collection("refguards", primary),
		ob: outbox.New(db, log), client: db.Client(), log: log,
		now: func() time.Time { return time.Now().UTC() }}
}

// KeepRevisions sets how many revisions each document keeps (default,
// and 0: all).
func (s *Store) KeepRevisions(n int) { s.keep = int64(n) }

// RenderPublic sets how an event renders the public detail of a document
// it carries (the HTTP layer's; unset, events carry none).
func (s *Store) RenderPublic(f func(document.Document) json.RawMessage) { s.public = f }

// Documents is the documents' collection (tests).
func (s *Store) Documents() *mongo.Collection { return s.docs }

// Outbox is the catalog's outbox, whose relay main starts.
func (s *Store) Outbox() *outbox.Outbox { return s.ob }

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
		mongox.Index("createdAt", false, "createdAt"),
		mongox.Index("tagsIds", false, "tagsIds"),
		mongox.Index("fileId", false, "file.id"),
		mongox.Index("imagesIds", false, "imagesIds"),
		mongox.Index("relatedIds", false, "relatedIds"),
		mongox.Index("trash", false, "isDeleted", "deletedAt"),
		mongox.Index("purgedAt", false, "purgedAt"),
		mongox.Index("publishAt", false, "isDeleted", "publishAt"),
		mongox.Index("unpublishAt", false, "isDeleted", "unpublishAt"),
		mongox.Index("revPending", false, "revPending"),
		mongox.Index("draftTagsIds", false, "draft.tagsIds"),
		mongox.Index("draftFileId", false, "draft.file.id"),
		mongox.Index("draftImagesIds", false, "draft.imagesIds"),
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
	if err := s.ob.EnsureIndexes(ctx); err != nil {
		return err
	}
	if _, err := s.ob.MoveLegacy(ctx, s.client, s.docs); err != nil {
		return err
	}
	if err := s.settleLegacy(ctx); err != nil {
		return err
	}
	// Creates left half-made by the version before transactions (its
	// placeholders, numbered 0).
	if _, err := s.docs.DeleteMany(ctx, bson.M{"seq": int64(0)}); err != nil {
		return err
	}
	n, err := s.docs.CountDocuments(ctx, bson.M{"seq": absent})
	if err != nil || n == 0 {
		return err
	}
	return mongox.InTx(ctx, s.client, func(ctx context.Context) error {
		seq, err := s.next(ctx)
		if err != nil {
			return err
		}
		_, err = s.docs.UpdateMany(ctx, bson.M{"seq": absent}, bson.M{"$set": bson.M{"seq": seq}})
		return err
	})
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
	Editorial editorialDoc  `bson:",inline"` // revisions.go
}

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

// Get implements document.Store. A purged document no longer exists.
func (s *Store) Get(ctx context.Context, id string) (document.Document, error) {
	var d doc
	err := s.docs.FindOne(ctx, bson.M{"_id": id, "purgedAt": absent}).Decode(&d)
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
	or := namingFilter(refs)
	if len(or) == 0 {
		return nil, nil
	}
	return s.ids(ctx, bson.M{"$or": or})
}

// namingFilter is the $or of documents naming refs.
func namingFilter(refs document.Refs) bson.A {
	var or bson.A
	if len(refs.Tags) > 0 {
		// A draft's tags are the document's own (pending changes): always named.
		or = append(or, bson.M{"tagsIds": bson.M{"$in": refs.Tags}}, bson.M{"draft.tagsIds": bson.M{"$in": refs.Tags}})
	}
	if len(refs.Media) > 0 {
		or = append(or, bson.M{"file.id": bson.M{"$in": refs.Media}}, bson.M{"imagesIds": bson.M{"$in": refs.Media}},
			bson.M{"draft.file.id": bson.M{"$in": refs.Media}}, bson.M{"draft.imagesIds": bson.M{"$in": refs.Media}})
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
// read once its guard is raised (a save that checked the media before
// then runs again and sees its deletion).
func (s *Store) MediaUsers(ctx context.Context, mediaID string) ([]string, error) {
	if err := s.raiseGuards(ctx, document.Refs{Media: []string{mediaID}}); err != nil {
		return nil, err
	}
	uses := bson.A{bson.M{"file.id": mediaID}, bson.M{"imagesIds": mediaID},
		bson.M{"draft.file.id": mediaID}, bson.M{"draft.imagesIds": mediaID}} // pending changes use it too
	return s.ids(ctx, bson.M{"isDeleted": false, "$or": uses})
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
func (s *Store) Counter(ctx context.Context) (int64, error) { return s.metaValue(ctx, counterID) }

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

// Sweep removes for good the tombstones of purged documents, in one
// transaction: it raises the horizon to their DeletedSeq and moves the
// counter (so that replicas read the new horizon), deletes their
// revisions, then them, so a sync cursor that could miss their removal is
// expired when they are gone. It returns how many it removed.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	cur, err := s.docs.Find(ctx, bson.M{"purgedAt": bson.M{"$exists": true}},
		options.Find().SetProjection(bson.M{"_id": 1, "deletedSeq": 1}).SetLimit(500))
	if err != nil {
		return 0, err
	}
	var stubs []doc
	if err := cur.All(ctx, &stubs); err != nil || len(stubs) == 0 {
		return 0, err
	}
	ids := make([]string, len(stubs))
	var horizon int64
	for i, d := range stubs {
		ids[i], horizon = d.ID, max(horizon, d.DeletedSq)
	}
	var removed int
	err = mongox.InTx(ctx, s.client, func(ctx context.Context) error {
		if _, err := s.meta.UpdateOne(ctx, bson.M{"_id": horizonID, "n": bson.M{"$lt": horizon}}, bson.M{"$set": bson.M{"n": horizon}}); err != nil {
			return err
		}
		if _, err := s.next(ctx); err != nil {
			return err
		}
		if _, err := s.revs.DeleteMany(ctx, bson.M{"documentId": bson.M{"$in": ids}}); err != nil {
			return err
		}
		res, err := s.docs.DeleteMany(ctx, bson.M{"_id": bson.M{"$in": ids}, "purgedAt": bson.M{"$exists": true}})
		if err != nil {
			return err
		}
		removed = int(res.DeletedCount)
		return nil
	})
	return removed, err
}

// Changes returns up to limit documents after the position (seq, id), in
// (seq, _id) order: the documents as they are now, deleted ones included.
// Read after Counter, they hold every change up to it. Writes of many
// documents at once share a seq, hence the id in the position; an empty
// id means every document at seq was read.
func (s *Store) Changes(ctx context.Context, afterSeq int64, afterID string, limit int) ([]document.Document, error) {
	filter := bson.M{"seq": bson.M{"$gt": afterSeq}}
	if afterID != "" {
		filter = bson.M{"$or": bson.A{filter, bson.M{"seq": afterSeq, "_id": bson.M{"$gt": afterID}}}}
	}
	return s.find(ctx, filter, options.Find().
		SetSort(bson.D{{Key: "seq", Value: 1}, {Key: "_id", Value: 1}}).
		SetLimit(int64(limit)))
}

// next takes the next number of the counter, in the transaction of ctx.
func (s *Store) next(ctx context.Context) (int64, error) {
	var m struct {
		N int64 `bson:"n"`
	}
	err := s.meta.FindOneAndUpdate(ctx, bson.M{"_id": counterID}, bson.M{"$inc": bson.M{"n": int64(1)}},
		options.FindOneAndUpdate().SetReturnDocument(options.After).SetUpsert(true)).Decode(&m)
	if err != nil {
		return 0, fmt.Errorf("sequence counter: %w", err)
	}
	return m.N, nil
}

// retryFor bounds how long a write runs its closure again because the
// documents it read changed before its transaction (other writes of the
// same documents committed first), before it gives up with
// document.ErrConflict.
const retryFor = 15 * time.Second

// attempts yields the attempts of a write: at once, then after short
// jittered pauses, until retryFor has passed or ctx ended.
func attempts(ctx context.Context) func(yield func(int) bool) {
	return func(yield func(int) bool) {
		deadline := time.Now().Add(retryFor)
		for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
			if !yield(i) {
				return
			}
			pause := time.Duration(1+rand.IntN(1<<min(i, 6))) * time.Millisecond
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
}

// errChanged is a transaction that found the documents its closure saw
// changed since: the write runs again on what they are now.
var errChanged = errors.New("documents changed since they were read")

type change struct {
	before, after document.Document
}

// Create implements document.Store: it reads the guards of adds, fn makes
// the document outside any transaction (it may ask other services about
// its references), then one transaction numbers and inserts it with its
// revision and events.
func (s *Store) Create(ctx context.Context, id string, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	for range attempts(ctx) {
		guards, err := s.readGuards(ctx, adds)
		if err != nil {
			return document.Document{}, err
		}
		d := document.Document{ID: id}
		if err := fn(&d); err != nil {
			return document.Document{}, err
		}
		done, err := s.commit(ctx, nil, guards, []change{{before: document.Document{ID: id}, after: d}})
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return document.Document{}, err
		}
		return done[0], nil
	}
	return document.Document{}, document.ErrConflict
}

// Update implements document.Store.
func (s *Store) Update(ctx context.Context, id string, adds document.Refs, fn func(*document.Document) error) (document.Document, error) {
	for range attempts(ctx) {
		before, err := s.Get(ctx, id)
		if err != nil {
			return document.Document{}, err
		}
		refs := before.Refs()
		guards, err := s.readGuards(ctx, document.Refs{Tags: append(refs.Tags, adds.Tags...), Media: append(refs.Media, adds.Media...)})
		if err != nil {
			return document.Document{}, err
		}
		after := before.Clone()
		switch err := fn(&after); {
		case errors.Is(err, document.ErrUnchanged):
			return before, nil
		case err != nil:
			return document.Document{}, err
		}
		done, err := s.commit(ctx, map[string]int64{id: before.Seq}, guards, []change{{before: before, after: after}})
		if errors.Is(err, errChanged) {
			continue
		}
		if err != nil {
			return document.Document{}, err
		}
		return done[0], nil
	}
	return document.Document{}, document.ErrConflict
}

// UpdateEach implements document.Store: one transaction for all.
func (s *Store) UpdateEach(ctx context.Context, ids []string, fn func(*document.Document) error) ([]document.Document, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	filter := bson.M{"_id": bson.M{"$in": ids}, "purgedAt": absent}
	return s.updateAll(ctx, filter, nil, fn)
}

// UpdateNaming implements document.Store: it raises the guards of refs
// (no save can add one of them after this without checking it anew),
// reads the documents naming refs, calls look and fn on each, outside any
// transaction; then one transaction writes the changes if no document it
// read changed, else the whole runs again. Its cost in database
// operations does not grow with the number of documents (the changes
// that only drop tags are grouped).
func (s *Store) UpdateNaming(ctx context.Context, refs document.Refs, look func(context.Context) error, fn func(*document.Document) error) ([]document.Document, error) {
	or := namingFilter(refs)
	if or == nil {
		return nil, nil
	}
	if err := s.raiseGuards(ctx, refs); err != nil {
		return nil, err
	}
	changed, err := s.updateAll(ctx, bson.M{"$or": or, "purgedAt": absent}, look, fn)
	slices.SortFunc(changed, func(a, b document.Document) int { return strings.Compare(a.ID, b.ID) })
	return changed, err
}

// updateAll applies fn to the documents of filter (after look, when set
// and it read any) and writes the changed ones in one transaction, which
// checks that the documents read are still as read: else it runs again.
// fn adds no reference.
func (s *Store) updateAll(ctx context.Context, filter bson.M, look func(context.Context) error, fn func(*document.Document) error) ([]document.Document, error) {
	for range attempts(ctx) {
		read, err := s.find(ctx, filter, nil)
		if err != nil || len(read) == 0 {
			return nil, err
		}
		if look != nil {
			if err := look(ctx); err != nil {
				return nil, err
			}
		}
		seqs, changes, err := applyAll(read, fn)
		if err != nil || len(changes) == 0 {
			return nil, err
		}
		done, err := s.commit(ctx, seqs, nil, changes)
		if errors.Is(err, errChanged) {
			continue
		}
		return done, err
	}
	return nil, document.ErrConflict
}

// applyAll runs fn on a copy of each document read, and returns the seqs
// read and the changes made.
func applyAll(read []document.Document, fn func(*document.Document) error) (map[string]int64, []change, error) {
	seqs := make(map[string]int64, len(read))
	var changes []change
	for _, before := range read {
		seqs[before.ID] = before.Seq
		after := before.Clone()
		switch err := fn(&after); {
		case errors.Is(err, document.ErrUnchanged):
		case err != nil:
			return nil, nil, err
		default:
			changes = append(changes, change{before: before, after: after})
		}
	}
	return seqs, changes, nil
}

// commit writes the changes in one transaction: it checks that the
// documents read are still at the seqs read and the guards of the
// references they add as read, takes the next number of the counter,
// writes every change under it with its revision and events, and returns
// the documents written. errChanged: nothing written, run again.
func (s *Store) commit(ctx context.Context, read map[string]int64, guards guardsRead, changes []change) ([]document.Document, error) {
	ctx, cancel := committing(ctx)
	defer cancel()
	var out []document.Document
	err := mongox.InTx(ctx, s.client, func(ctx context.Context) error {
		if err := s.unchanged(ctx, read); err != nil {
			return err
		}
		seq, err := s.next(ctx)
		if err != nil {
			return err
		}
		out = make([]document.Document, len(changes))
		numbered := make([]change, len(changes))
		for i, c := range changes {
			c.after.Seq = seq
			switch {
			case !c.after.IsDeleted:
				c.after.DeletedSeq = 0
			case !c.before.IsDeleted:
				c.after.DeletedSeq = seq
			}
			numbered[i], out[i] = c, c.after
		}
		if err := s.keepGuards(ctx, guards, numbered, seq); err != nil {
			return err
		}
		return s.write(ctx, seq, numbered)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// commitTimeout bounds a commit once its caller's context may be done.
const commitTimeout = 10 * time.Second

// committing is a context for a commit: the write was decided once its
// closure ran, so the caller's end (its client left, its time budget ran
// out) does not cut it; bounded by commitTimeout or the caller's deadline
// if that is later (an event handler's batch of many documents).
func committing(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(commitTimeout)
	if d, ok := ctx.Deadline(); ok && d.After(deadline) {
		deadline = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// unchanged checks, in the transaction of ctx, that the documents read
// are at the seqs read and not purged.
func (s *Store) unchanged(ctx context.Context, read map[string]int64) error {
	if len(read) == 0 {
		return nil
	}
	ids := slices.Collect(maps.Keys(read))
	filter := bson.M{"_id": bson.M{"$in": ids}}
	if len(ids) == 1 {
		filter = bson.M{"_id": ids[0]}
	}
	cur, err := s.docs.Find(ctx, filter, options.Find().SetProjection(bson.M{"_id": 1, "seq": 1, "purgedAt": 1}))
	if err != nil {
		return err
	}
	var now []doc
	if err := cur.All(ctx, &now); err != nil {
		return err
	}
	if len(now) != len(read) {
		return errChanged
	}
	for _, d := range now {
		if seq, ok := read[d.ID]; !ok || seq != d.Seq || d.PurgedAt != nil {
			return errChanged
		}
	}
	return nil
}

// write stores the numbered changes, their revisions and their events in
// the transaction of ctx: one statement per change, but one for all the
// changes that only drop the same tags and record the same change (a tag
// deletion's).
func (s *Store) write(ctx context.Context, seq int64, changes []change) error {
	var models []mongo.WriteModel
	groups := map[string]*tagDrop{}
	var order []string
	var evs []events.Event
	for _, c := range changes {
		e, err := s.events(ctx, seq, c)
		if err != nil {
			return err
		}
		evs = append(evs, e...)
		if c.before.Seq == 0 {
			models = append(models, mongo.NewInsertOneModel().SetDocument(toDoc(c.after)))
			continue
		}
		if g, ok := tagDropOf(c.before, c.after); ok {
			key := g.key()
			if groups[key] == nil {
				groups[key], order = g, append(order, key)
			}
			groups[key].add(c.before)
			continue
		}
		models = append(models, mongo.NewReplaceOneModel().SetFilter(bson.M{"_id": c.after.ID}).SetReplacement(toDoc(c.after)))
	}
	for _, key := range order {
		models = append(models, groups[key].models(seq)...)
	}
	if _, err := s.docs.BulkWrite(ctx, models); err != nil {
		return err
	}
	if err := s.putRevisions(ctx, changes); err != nil {
		return err
	}
	return s.ob.Add(ctx, evs...)
}

// subjects are the events' subjects.
var subjects = map[document.Event]string{
	document.Deleted: events.DocumentDeleted, document.Purged: events.DocumentPurged,
	document.Publication: events.DocumentPublished, document.Unpublication: events.DocumentUnpublished,
	document.Created: events.DocumentCreated, document.Updated: events.DocumentUpdated,
	document.DraftSaved: events.DocumentDraftSaved, document.Scheduled: events.DocumentScheduled,
	document.Restored: events.DocumentRestored,
}

// events are the events of a change numbered seq: who made it, and the
// public detail when the change left the document public.
func (s *Store) events(ctx context.Context, seq int64, c change) ([]events.Event, error) {
	kinds := document.Events(c.before, c.after)
	out := make([]events.Event, 0, len(kinds))
	for _, k := range kinds {
		d := c.after
		at := d.Change.At
		switch {
		case k == document.Purged:
			at = d.PurgedAt
		case k == document.Publication:
			at = d.PublishedAt
		case at.IsZero():
			at = s.now()
		}
		ev, err := events.New(ctx, Source, subjects[k], s.payload(k, seq, c), at)
		if err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// payload is the data of an event of kind k (libs/events: a deletion says
// whether the app could see the document, a purge is only its id).
func (s *Store) payload(k document.Event, seq int64, c change) any {
	d := c.after
	switch k {
	case document.Deleted:
		_, was := document.PublicView(c.before)
		return events.DocumentDeletedData{DocumentID: d.ID, Seq: seq, Actor: d.Change.By, WasPublic: was}
	case document.Purged:
		return events.DocumentPurgedData{DocumentID: d.ID, Seq: seq}
	}
	data := events.DocumentData{DocumentID: d.ID, Version: d.Version, Seq: seq, Actor: d.Change.By}
	if v, public := document.PublicView(d); public && s.public != nil {
		data.Public = s.public(v)
		if len(data.Public) > events.MaxPublicDetail {
			v.Content, v.Sources = "", nil
			data.Public, data.PublicPartial = s.public(v), true
		}
	}
	return data
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
	ids             []string
	since           []tagSinceDoc // live tagSince entries to pull
	draftSince      []tagSinceDoc
}

func (g *tagDrop) key() string {
	return fmt.Sprintf("%q|%q|%v|%v", g.tags, g.draftTags, g.version, g.change)
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
// exact values read), from each document of the group, as the change's
// own write would: new seq, next version, the change record, UpdatedAt
// kept; one statement per idChunk ids.
func (g *tagDrop) models(seq int64) []mongo.WriteModel {
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
	update := bson.M{"$pullAll": pull, "$set": set}
	if g.version {
		update["$inc"] = bson.M{"version": int64(1)}
	}
	var models []mongo.WriteModel
	for ids := range slices.Chunk(g.ids, idChunk) {
		models = append(models, mongo.NewUpdateManyModel().
			SetFilter(bson.M{"_id": bson.M{"$in": ids}}).
			SetUpdate(update))
	}
	return models
}

// tagDropOf returns the group of a change that is before less some of its
// tags and their TagSince, in the live version or the pending changes,
// with at most the editorial record's own moves (the next version, a new
// change record).
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
