// Package mongostore keeps the catalog's documents in MongoDB (collection
// documents), a revision counter of the collection (collection meta) that
// listing caches compare against, and the marks of writes whose references
// are still to be checked again (collection unsettled). bson shapes live
// only here.
package mongostore

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/services/catalog/internal/document"
)

// Source is the CloudEvents source of the catalog's events.
const Source = "/catalog"

// Store implements document.Store.
type Store struct {
	docs      *mongo.Collection
	meta      *mongo.Collection
	unsettled *mongo.Collection
	log       *slog.Logger
}

var _ document.Store = (*Store)(nil)

// New returns a Store on db. Call EnsureIndexes once at start-up.
func New(db *mongo.Database, log *slog.Logger) *Store {
	return &Store{docs: db.Collection("documents"), meta: db.Collection("meta"), unsettled: db.Collection("unsettled"), log: log}
}

// Documents is the collection, for the outbox relay.
func (s *Store) Documents() *mongo.Collection { return s.docs }

// EnsureIndexes creates the indexes; idempotent.
func (s *Store) EnsureIndexes(ctx context.Context) error {
	if err := mongox.EnsureIndexes(ctx, s.unsettled, mongox.Index("at", false, "at")); err != nil {
		return err
	}
	return mongox.EnsureIndexes(ctx, s.docs,
		mongox.Index("createdAt", false, "createdAt"),
		mongox.Index("tagsIds", false, "tagsIds"),
		mongox.Index("fileId", false, "file.id"),
		mongox.Index("imagesIds", false, "imagesIds"),
		mongox.Index("outbox", false, outbox.CountField),
	)
}

// mark records, before a write that sets a document's references, that
// they are to be checked again (Settle removes it). It is its own record,
// written first, rather than a field of the document: a crash between the
// two leaves a mark (harmless: Settle finds the document as it is), and
// clearing it never rewrites the document, so it cannot undo a concurrent
// event's change on a server without atomic updates (FerretDB). A later
// write's mark replaces an earlier one.
func (s *Store) mark(ctx context.Context, id string, at time.Time) error {
	set := func() error {
		_, err := s.unsettled.UpdateOne(ctx, bson.M{"_id": id}, bson.M{"$set": bson.M{"at": at}}, options.UpdateOne().SetUpsert(true))
		return err
	}
	err := set()
	if mongox.IsDuplicateKey(err) { // two first upserts raced: now there is one to update
		err = set()
	}
	return err
}

type fileDoc struct {
	ID   string `bson:"id"`
	Name string `bson:"name"`
}

type doc struct {
	ID        string     `bson:"_id"`
	Title     string     `bson:"title"`
	Type      string     `bson:"type"`
	URL       string     `bson:"url,omitempty"`
	TagsIDs   []string   `bson:"tagsIds"`
	Content   string     `bson:"content,omitempty"`
	Sources   []string   `bson:"sources,omitempty"`
	ImagesIDs []string   `bson:"imagesIds,omitempty"`
	File      *fileDoc   `bson:"file,omitempty"`
	IsDeleted bool       `bson:"isDeleted"`
	CreatedAt time.Time  `bson:"createdAt"`
	UpdatedAt time.Time  `bson:"updatedAt"`
	DeletedAt *time.Time `bson:"deletedAt,omitempty"`
	RefsAt    *time.Time `bson:"refsAt,omitempty"`
}

func toDoc(d document.Document) doc {
	out := doc{
		ID: d.ID, Title: d.Title, Type: string(d.Type), URL: d.URL, TagsIDs: orEmpty(d.TagsIDs),
		Content: d.Content, IsDeleted: d.IsDeleted, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
	if d.Type.Inline() {
		out.Sources, out.ImagesIDs = orEmpty(d.Sources), orEmpty(d.ImagesIDs)
	}
	if d.File != nil {
		out.File = &fileDoc{ID: d.File.ID, Name: d.File.Name}
	}
	if !d.RefsAt.IsZero() {
		out.RefsAt = &d.RefsAt
	}
	return out
}

func (d doc) domain() document.Document {
	out := document.Document{
		ID: d.ID, Title: d.Title, Type: document.Type(d.Type), URL: d.URL, TagsIDs: orEmpty(d.TagsIDs),
		Content: d.Content, IsDeleted: d.IsDeleted, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(),
	}
	if out.Type.Inline() {
		out.Sources, out.ImagesIDs = orEmpty(d.Sources), orEmpty(d.ImagesIDs)
	}
	if d.File != nil {
		out.File = &document.File{ID: d.File.ID, Name: d.File.Name}
	}
	if d.RefsAt != nil {
		out.RefsAt = d.RefsAt.UTC()
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Insert implements document.Store.
func (s *Store) Insert(ctx context.Context, d document.Document) error {
	if err := s.mark(ctx, d.ID, d.UpdatedAt); err != nil {
		return err
	}
	if _, err := s.docs.InsertOne(ctx, toDoc(d)); err != nil {
		return err
	}
	return s.bump(ctx)
}

// Get implements document.Store.
func (s *Store) Get(ctx context.Context, id string) (document.Document, error) {
	var d doc
	err := s.docs.FindOne(ctx, bson.M{"_id": id}, options.FindOne().SetProjection(bson.M{outbox.Field: 0})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return document.Document{}, document.ErrNotFound
	}
	if err != nil {
		return document.Document{}, err
	}
	return d.domain(), nil
}

// summaryFields are the only fields a listing reads.
var summaryFields = bson.M{"title": 1, "type": 1, "url": 1, "tagsIds": 1, "isDeleted": 1, "createdAt": 1, "updatedAt": 1}

// List implements document.Store: newest first, ties by id.
func (s *Store) List(ctx context.Context, withDeleted bool) ([]document.Summary, error) {
	filter := bson.M{}
	if !withDeleted {
		filter["isDeleted"] = false
	}
	cur, err := s.docs.Find(ctx, filter, options.Find().
		SetProjection(summaryFields).
		SetSort(bson.D{{Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}}))
	if err != nil {
		return nil, err
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]document.Summary, len(docs))
	for i, d := range docs {
		out[i] = document.Summary{
			ID: d.ID, Title: d.Title, Type: document.Type(d.Type), URL: d.URL, TagsIDs: orEmpty(d.TagsIDs),
			IsDeleted: d.IsDeleted, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(),
		}
	}
	return out, nil
}

// Replace implements document.Store. Fields are set one by one (not a
// whole-document replace) so a pending outbox in the document survives.
func (s *Store) Replace(ctx context.Context, d document.Document, readAt time.Time) error {
	nd := toDoc(d)
	set := bson.M{"title": nd.Title, "tagsIds": nd.TagsIDs, "updatedAt": nd.UpdatedAt}
	unset := bson.M{}
	put := func(field string, v any, present bool) {
		if present {
			set[field] = v
		} else {
			unset[field] = ""
		}
	}
	put("url", nd.URL, nd.URL != "")
	put("content", nd.Content, d.Type.Inline())
	put("sources", nd.Sources, d.Type.Inline())
	put("imagesIds", nd.ImagesIDs, d.Type.Inline())
	put("file", nd.File, nd.File != nil)
	put("refsAt", nd.RefsAt, nd.RefsAt != nil)
	update := bson.M{"$set": set}
	if len(unset) > 0 {
		update["$unset"] = unset
	}
	if err := s.mark(ctx, d.ID, d.UpdatedAt); err != nil {
		return err
	}
	res, err := s.docs.UpdateOne(ctx, bson.M{"_id": d.ID, "isDeleted": false, "updatedAt": readAt}, update)
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		cur, err := s.Get(ctx, d.ID)
		switch {
		case err != nil:
			return err
		case cur.IsDeleted:
			return document.ErrDeleted
		default:
			return document.ErrConflict
		}
	}
	return s.bump(ctx)
}

// SoftDelete implements document.Store: the flag and the deletion event are
// written together, so the event cannot be lost.
func (s *Store) SoftDelete(ctx context.Context, id string, at time.Time) (bool, error) {
	ev, err := events.New(ctx, Source, events.DocumentDeleted, events.DocumentDeletedData{DocumentID: id}, at)
	if err != nil {
		return false, err
	}
	update := bson.M{"$set": bson.M{"isDeleted": true, "deletedAt": at, "updatedAt": at}}
	if err := outbox.Add(update, ev); err != nil {
		return false, err
	}
	res, err := s.docs.UpdateOne(ctx, bson.M{"_id": id, "isDeleted": false}, update)
	if err != nil {
		return false, err
	}
	if res.MatchedCount == 0 {
		if _, err := s.Get(ctx, id); err != nil {
			return false, err
		}
		return false, nil // already deleted
	}
	return true, s.bump(ctx)
}

// Restore implements document.Store.
func (s *Store) Restore(ctx context.Context, id string, at time.Time) (document.Document, error) {
	if err := s.mark(ctx, id, at); err != nil {
		return document.Document{}, err
	}
	res, err := s.docs.UpdateOne(ctx, bson.M{"_id": id, "isDeleted": true},
		bson.M{"$set": bson.M{"isDeleted": false, "updatedAt": at}, "$unset": bson.M{"deletedAt": ""}})
	if err != nil {
		return document.Document{}, err
	}
	if res.MatchedCount > 0 {
		if err := s.bump(ctx); err != nil {
			return document.Document{}, err
		}
	}
	return s.Get(ctx, id)
}

// Unsettled implements document.Store.
func (s *Store) Unsettled(ctx context.Context, before time.Time, limit int) ([]document.Mark, error) {
	cur, err := s.unsettled.Find(ctx, bson.M{"at": bson.M{"$lt": before}}, options.Find().SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	var marks []struct {
		ID string    `bson:"_id"`
		At time.Time `bson:"at"`
	}
	if err := cur.All(ctx, &marks); err != nil {
		return nil, err
	}
	out := make([]document.Mark, len(marks))
	for i, m := range marks {
		out[i] = document.Mark{DocumentID: m.ID, At: m.At.UTC()}
	}
	return out, nil
}

// Settle implements document.Store. Like the event handlers, it leaves
// updatedAt alone.
func (s *Store) Settle(ctx context.Context, m document.Mark, refsAt time.Time, goneTags, goneMedia []string) error {
	if len(goneTags)+len(goneMedia) > 0 {
		// Only the references that were checked: a write since then
		// checked its own (it may name a tag created anew meanwhile).
		filter := bson.M{"_id": m.DocumentID, "refsAt": refsAt}
		if refsAt.IsZero() {
			filter["refsAt"] = bson.M{"$exists": false}
		}
		if err := s.drop(ctx, filter, goneTags, goneMedia); err != nil {
			return err
		}
	}
	// Only this mark: a later write's mark stays for that write.
	_, err := s.unsettled.DeleteOne(ctx, bson.M{"_id": m.DocumentID, "at": m.At})
	return err
}

// drop takes gone tags and media out of the document filter matches and
// moves the listing revision.
func (s *Store) drop(ctx context.Context, filter bson.M, goneTags, goneMedia []string) error {
	pull := bson.M{}
	if len(goneTags) > 0 {
		pull["tagsIds"] = goneTags
	}
	if len(goneMedia) > 0 {
		pull["imagesIds"] = goneMedia
	}
	if _, err := s.docs.UpdateOne(ctx, filter, bson.M{"$pullAll": pull}); err != nil {
		return err
	}
	if len(goneMedia) > 0 {
		withFile := bson.M{"file.id": bson.M{"$in": goneMedia}}
		for k, v := range filter {
			withFile[k] = v
		}
		if _, err := s.docs.UpdateOne(ctx, withFile, bson.M{"$unset": bson.M{"file": ""}}); err != nil {
			return err
		}
	}
	return s.bump(ctx)
}

// MediaUsers implements document.Store.
func (s *Store) MediaUsers(ctx context.Context, mediaID string) ([]string, error) {
	cur, err := s.docs.Find(ctx, bson.M{"isDeleted": false, "$or": bson.A{
		bson.M{"file.id": mediaID}, bson.M{"imagesIds": mediaID},
	}}, options.Find().SetProjection(bson.M{"_id": 1}))
	if err != nil {
		return nil, err
	}
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

// RemoveTags takes the tags out of every document that has them, deleted
// documents included. It is idempotent: applying it twice changes nothing
// more. ($pullAll, not $pull with $in: the latter is a silent no-op on
// FerretDB.)
func (s *Store) RemoveTags(ctx context.Context, tagIDs []string) (int64, error) {
	if len(tagIDs) == 0 {
		return 0, nil
	}
	res, err := s.docs.UpdateMany(ctx, bson.M{"tagsIds": bson.M{"$in": tagIDs}},
		bson.M{"$pullAll": bson.M{"tagsIds": tagIDs}})
	if err != nil {
		return 0, err
	}
	if res.ModifiedCount > 0 {
		return res.ModifiedCount, s.bump(ctx)
	}
	return 0, nil
}

// RemoveTagCheckedBefore implements consumers.Store: like RemoveTags, for
// one tag and only in documents whose references were checked before the
// given time (refsAt; updatedAt for documents stored before refsAt was
// kept).
func (s *Store) RemoveTagCheckedBefore(ctx context.Context, tagID string, before time.Time) (int64, error) {
	res, err := s.docs.UpdateMany(ctx, bson.M{"tagsIds": tagID, "$or": bson.A{
		bson.M{"refsAt": bson.M{"$lt": before}},
		bson.M{"refsAt": bson.M{"$exists": false}, "updatedAt": bson.M{"$lt": before}},
	}},
		bson.M{"$pullAll": bson.M{"tagsIds": []string{tagID}}})
	if err != nil {
		return 0, err
	}
	if res.ModifiedCount > 0 {
		return res.ModifiedCount, s.bump(ctx)
	}
	return 0, nil
}

// DropMedia removes references to a deleted media from every document.
// Normally only deleted documents have any: the media service refuses to
// delete a media that a live document uses. A write that raced the deletion
// can still leave one on a live document (its references were checked
// before the media was marked as being deleted, and it was stored after the
// media service asked for users; a restore likewise). Such a live document
// loses the reference too, rather than keep one to bytes that are gone, and
// live names it so the caller can say so. Idempotent.
func (s *Store) DropMedia(ctx context.Context, mediaID string) (dropped int64, live []string, err error) {
	live, err = s.MediaUsers(ctx, mediaID)
	if err != nil {
		return 0, nil, err
	}
	a, err := s.docs.UpdateMany(ctx, bson.M{"file.id": mediaID}, bson.M{"$unset": bson.M{"file": ""}})
	if err != nil {
		return 0, live, err
	}
	b, err := s.docs.UpdateMany(ctx, bson.M{"imagesIds": mediaID},
		bson.M{"$pullAll": bson.M{"imagesIds": []string{mediaID}}})
	if err != nil {
		return a.ModifiedCount, live, err
	}
	n := a.ModifiedCount + b.ModifiedCount
	if n > 0 {
		return n, live, s.bump(ctx)
	}
	return 0, live, nil
}

// Revision returns a number that changes whenever any document changes, for
// listing caches. It is bumped after each write; a bump lost to a crash
// between the two writes is covered by the caches' maximum age.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var m struct {
		Rev int64 `bson:"rev"`
	}
	err := s.meta.FindOne(ctx, bson.M{"_id": "documents"}).Decode(&m)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return m.Rev, err
}

// bump moves the revision after a write. It never fails the write that
// already happened (a client told 500 would retry and store a duplicate): a
// lost bump only delays other replicas' listings by the caches' MaxAge. Two
// first upserts racing make one fail on the unique _id; it is retried.
func (s *Store) bump(ctx context.Context) error {
	inc := func() error {
		_, err := s.meta.UpdateOne(ctx, bson.M{"_id": "documents"}, bson.M{"$inc": bson.M{"rev": int64(1)}},
			options.UpdateOne().SetUpsert(true))
		return err
	}
	err := inc()
	if mongox.IsDuplicateKey(err) {
		err = inc()
	}
	if err != nil {
		s.log.WarnContext(ctx, "listing revision not moved; other replicas see the change within their cache's max age", "error", err)
	}
	return nil
}
