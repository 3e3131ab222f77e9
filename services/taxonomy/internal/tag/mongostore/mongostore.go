// Package mongostore keeps the taxonomy in MongoDB: collections categories
// and tags, and the revision that moves after every write of them
// (collection meta). bson shapes live only here.
//
// Records have an internal _id; the caller-supplied id is a uniquely indexed
// field. Deleting marks a record as a tombstone in one single-document write
// that also renames its unique keys (so the id and the name are free again
// at once) and stores the deletion events in the record's outbox. The relay
// publishes the events and then removes the tombstone (Sweep), unless it
// holds an Idempotency-Key not expired yet (key.go). Tags point to
// their category's internal _id, so a category deleted and created again
// under the same id never inherits old tags.
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
	"github.com/doclib/libs/idempotency"
	idemstore "github.com/doclib/libs/idempotency/mongostore"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// Source is the CloudEvents source of the taxonomy's events.
const Source = "/taxonomy"

// Store implements tag.Store.
type Store struct {
	categories *mongo.Collection
	tags       *mongo.Collection
	rev        *mongox.Revision
	now        func() time.Time
	keys       idemstore.KeySweep
	// collided, if set, runs when a keyed insert met a unique index,
	// before the key's holder is looked up (tests of that race).
	collided func()
}

var _ tag.Store = (*Store)(nil)

// New returns a Store on db. Call EnsureIndexes once at start-up. log
// receives the failures of revision bumps, which never fail a write.
func New(db *mongo.Database, log *slog.Logger) *Store {
	s := &Store{categories: db.Collection("categories"), tags: db.Collection("tags"),
		rev: mongox.NewRevision(db.Collection("meta"), "taxonomy", log), now: time.Now}
	s.keys.Every = keySweepEvery
	return s
}

// Revision returns a number that moves after every write of a category or
// tag (collection meta), so that every replica's rendering of the
// categories can tell, with one small read, whether it must render again.
// Each write method moves it once it has begun to write, whether or not
// the write then succeeded: a spare move costs one rendering.
func (s *Store) Revision(ctx context.Context) (int64, error) { return s.rev.Get(ctx) }

// Categories and Tags are the collections, for the outbox relay.
func (s *Store) Collections() (categories, tags *mongo.Collection) { return s.categories, s.tags }

// EnsureIndexes creates the indexes; it is idempotent and safe when several
// replicas start together.
func (s *Store) EnsureIndexes(ctx context.Context) error {
	if err := s.prepareKeyIndex(ctx); err != nil {
		return err
	}
	if err := mongox.EnsureIndexes(ctx, s.categories,
		mongox.Index("id_unique", true, "id"),
		mongox.Index("nameKey_unique", true, "nameKey"),
		mongox.Index("seq", false, "seq"),
		mongox.Index("outbox", false, outbox.CountField),
		idemstore.KeyIndex(), idemstore.ExpiryIndex(),
	); err != nil {
		return err
	}
	return mongox.EnsureIndexes(ctx, s.tags,
		mongox.Index("id_unique", true, "id"),
		mongox.Index("category_nameKey_unique", true, "categoryRef", "nameKey"),
		mongox.Index("seq", false, "seq"),
		mongox.Index("outbox", false, outbox.CountField),
		idemstore.KeyIndex(), idemstore.ExpiryIndex(),
	)
}

type categoryDoc struct {
	OID       bson.ObjectID `bson:"_id"`
	ID        string        `bson:"id"`
	Name      string        `bson:"name"`
	NameKey   string        `bson:"nameKey"`
	Seq       int64         `bson:"seq"`
	CreatedAt time.Time     `bson:"createdAt"`
	UpdatedAt time.Time     `bson:"updatedAt"`
	DeletedAt *time.Time    `bson:"deletedAt,omitempty"`
	DeletedID string        `bson:"deletedId,omitempty"`
	// Stamp is the Idempotency-Key the category was created under.
	Stamp idemstore.Stamp `bson:",inline"`
}

type tagDoc struct {
	OID         bson.ObjectID `bson:"_id"`
	ID          string        `bson:"id"`
	Name        string        `bson:"name"`
	NameKey     string        `bson:"nameKey"`
	CategoryID  string        `bson:"categoryId"`
	CategoryRef bson.ObjectID `bson:"categoryRef"`
	Seq         int64         `bson:"seq"`
	CreatedAt   time.Time     `bson:"createdAt"`
	UpdatedAt   time.Time     `bson:"updatedAt"`
	DeletedAt   *time.Time    `bson:"deletedAt,omitempty"`
	DeletedID   string        `bson:"deletedId,omitempty"`
	// Stamp is the Idempotency-Key the tag was created under.
	Stamp idemstore.Stamp `bson:",inline"`
}

func (d categoryDoc) domain() tag.Category {
	return tag.Category{ID: d.ID, Name: d.Name, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), Tags: []tag.Tag{}}
}

func (d tagDoc) domain() tag.Tag {
	return tag.Tag{ID: d.ID, Name: d.Name, CategoryID: d.CategoryID, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

var (
	live  = bson.M{"deletedAt": bson.M{"$exists": false}}
	bySeq = options.Find().SetSort(bson.D{{Key: "seq", Value: 1}, {Key: "_id", Value: 1}})
)

// seq orders records by creation; ties (same nanosecond on two replicas)
// are broken by _id, so the order is stable.
func seq() int64 { return time.Now().UnixNano() }

func liveByID(id string) bson.M { return bson.M{"id": id, "deletedAt": bson.M{"$exists": false}} }

// tombstoneKey replaces unique keys of a deleted record; '~' never appears
// in a valid id, and a name key with it cannot collide with a live one
// because it embeds the unique _id.
func tombstoneKey(oid bson.ObjectID) string { return "~deleted~" + oid.Hex() }

// Categories implements tag.Store.
func (s *Store) Categories(ctx context.Context) ([]tag.Category, error) {
	var cats []categoryDoc
	if err := find(ctx, s.categories, live, bySeq, &cats); err != nil {
		return nil, err
	}
	var tags []tagDoc
	if err := find(ctx, s.tags, live, bySeq, &tags); err != nil {
		return nil, err
	}
	byRef := make(map[bson.ObjectID][]tag.Tag, len(cats))
	for _, t := range tags {
		byRef[t.CategoryRef] = append(byRef[t.CategoryRef], t.domain())
	}
	out := make([]tag.Category, len(cats))
	for i, c := range cats {
		out[i] = c.domain()
		if ts := byRef[c.OID]; ts != nil {
			out[i].Tags = ts
		}
	}
	return out, nil
}

// Category implements tag.Store.
func (s *Store) Category(ctx context.Context, id string) (tag.Category, error) {
	c, err := s.category(ctx, id)
	if err != nil {
		return tag.Category{}, err
	}
	return s.withTags(ctx, c)
}

func (s *Store) category(ctx context.Context, id string) (categoryDoc, error) {
	var c categoryDoc
	err := s.categories.FindOne(ctx, liveByID(id)).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return c, tag.ErrCategoryNotFound
	}
	return c, err
}

func (s *Store) withTags(ctx context.Context, c categoryDoc) (tag.Category, error) {
	var tags []tagDoc
	filter := bson.M{"categoryRef": c.OID, "deletedAt": bson.M{"$exists": false}}
	if err := find(ctx, s.tags, filter, bySeq, &tags); err != nil {
		return tag.Category{}, err
	}
	out := c.domain()
	for _, t := range tags {
		out.Tags = append(out.Tags, t.domain())
	}
	return out, nil
}

// InsertCategory implements tag.Store.
func (s *Store) InsertCategory(ctx context.Context, c tag.Category, key *idempotency.Claim) error {
	doc := categoryDoc{
		OID: bson.NewObjectID(), ID: c.ID, Name: c.Name, NameKey: tag.NameKey(c.Name),
		Seq: seq(), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, Stamp: idemstore.StampOf(key),
	}
	defer s.rev.Bump(ctx)
	return s.insert(ctx, s.categories, tag.KindCategory, c.ID, doc, key)
}

var errKeyLetGo = errors.New("an idempotency key was held, then let go, at every attempt")

// whichDuplicate tells a taken id from a taken name after a unique-index
// violation not on the Idempotency-Key (insert). MongoDB names the index's
// keys in the error (keyPattern); the development database (FerretDB)
// does not, so then the store asks whether the id is taken.
func whichDuplicate(ctx context.Context, coll *mongo.Collection, id string, err error) error {
	var we mongo.WriteException
	if errors.As(err, &we) {
		for _, e := range we.WriteErrors {
			keys, ok := e.Raw.Lookup("keyPattern").DocumentOK()
			switch {
			case !ok:
			case keys.Lookup(idemstore.KeyField).Type != 0:
				// The key's holder let it go twice during one insert
				// (insert): not a taken name, and not kept (a 500).
				return errKeyLetGo
			case keys.Lookup("id").Type != 0:
				return tag.ErrDuplicateID
			default:
				return tag.ErrDuplicateName
			}
		}
	}
	n, err := coll.CountDocuments(ctx, bson.M{"id": id})
	if err != nil {
		return err
	}
	if n > 0 {
		return tag.ErrDuplicateID
	}
	return tag.ErrDuplicateName
}

// RenameCategory implements tag.Store.
func (s *Store) RenameCategory(ctx context.Context, id, name string, at time.Time) (tag.Category, error) {
	defer s.rev.Bump(ctx)
	if err := rename(ctx, s.categories, id, name, at); err != nil {
		return tag.Category{}, err
	}
	c, err := s.category(ctx, id)
	if err != nil {
		return tag.Category{}, err
	}
	return s.withTags(ctx, c)
}

// rename sets the name of the live record id.
func rename(ctx context.Context, coll *mongo.Collection, id, name string, at time.Time) error {
	res, err := coll.UpdateOne(ctx, liveByID(id),
		bson.M{"$set": bson.M{"name": name, "nameKey": tag.NameKey(name), "updatedAt": at}})
	switch {
	case mongo.IsDuplicateKeyError(err):
		return tag.ErrDuplicateName
	case err != nil:
		return err
	case res.MatchedCount == 0:
		return tag.ErrCategoryNotFound
	}
	return nil
}

// DeleteCategory implements tag.Store. The category is marked deleted with
// its event first; its tags follow, each with its own event. Should this
// stop half-way, Sweep deletes the tags left over.
func (s *Store) DeleteCategory(ctx context.Context, id string, at time.Time) error {
	c, err := s.category(ctx, id)
	if err != nil {
		return err
	}
	var tags []tagDoc
	if err := find(ctx, s.tags, bson.M{"categoryRef": c.OID, "deletedAt": bson.M{"$exists": false}}, bySeq, &tags); err != nil {
		return err
	}
	ids := make([]string, len(tags))
	for i, t := range tags {
		ids[i] = t.ID
	}
	ev, err := events.New(ctx, Source, events.CategoryDeleted, events.CategoryDeletedData{CategoryID: id, TagsIDs: ids}, at)
	if err != nil {
		return err
	}
	update := bson.M{"$set": bson.M{"id": tombstoneKey(c.OID), "nameKey": tombstoneKey(c.OID), "deletedAt": at, "deletedId": id}}
	if err := outbox.Add(update, ev); err != nil {
		return err
	}
	defer s.rev.Bump(ctx)
	res, err := s.categories.UpdateOne(ctx, bson.M{"_id": c.OID, "deletedAt": bson.M{"$exists": false}}, update)
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return tag.ErrCategoryNotFound // deleted by someone else meanwhile
	}
	return s.deleteTagsOf(ctx, c.OID, at)
}

// deleteTagsOf marks every live tag of a category deleted, each with its event.
func (s *Store) deleteTagsOf(ctx context.Context, ref bson.ObjectID, at time.Time) error {
	var tags []tagDoc
	if err := find(ctx, s.tags, bson.M{"categoryRef": ref, "deletedAt": bson.M{"$exists": false}}, bySeq, &tags); err != nil {
		return err
	}
	for _, t := range tags {
		if err := s.tombstoneTag(ctx, t, at); err != nil && !errors.Is(err, tag.ErrTagNotFound) {
			return err
		}
	}
	return nil
}

func (s *Store) tombstoneTag(ctx context.Context, t tagDoc, at time.Time) error {
	ev, err := events.New(ctx, Source, events.TagDeleted, events.TagDeletedData{TagID: t.ID, CategoryID: t.CategoryID}, at)
	if err != nil {
		return err
	}
	update := bson.M{"$set": bson.M{"id": tombstoneKey(t.OID), "nameKey": tombstoneKey(t.OID), "deletedAt": at, "deletedId": t.ID}}
	if err := outbox.Add(update, ev); err != nil {
		return err
	}
	res, err := s.tags.UpdateOne(ctx, bson.M{"_id": t.OID, "deletedAt": bson.M{"$exists": false}}, update)
	if err != nil {
		return err
	}
	if res.MatchedCount == 0 {
		return tag.ErrTagNotFound
	}
	return nil
}

// Tag implements tag.Store.
func (s *Store) Tag(ctx context.Context, id string) (tag.Tag, error) {
	ts, err := s.Tags(ctx, []string{id})
	if err != nil {
		return tag.Tag{}, err
	}
	if len(ts) == 0 {
		return tag.Tag{}, tag.ErrTagNotFound
	}
	return ts[0], nil
}

// Tags implements tag.Store. Tags whose category is being deleted are left
// out, even before Sweep has reached them.
func (s *Store) Tags(ctx context.Context, ids []string) ([]tag.Tag, error) {
	var docs []tagDoc
	if err := find(ctx, s.tags, bson.M{"id": bson.M{"$in": ids}, "deletedAt": bson.M{"$exists": false}}, nil, &docs); err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return []tag.Tag{}, nil
	}
	refs := make([]bson.ObjectID, 0, len(docs))
	for _, d := range docs {
		refs = append(refs, d.CategoryRef)
	}
	var cats []categoryDoc
	if err := find(ctx, s.categories, bson.M{"_id": bson.M{"$in": refs}, "deletedAt": bson.M{"$exists": false}},
		options.Find().SetProjection(bson.M{"_id": 1}), &cats); err != nil {
		return nil, err
	}
	liveCats := make(map[bson.ObjectID]bool, len(cats))
	for _, c := range cats {
		liveCats[c.OID] = true
	}
	out := make([]tag.Tag, 0, len(docs))
	for _, d := range docs {
		if liveCats[d.CategoryRef] {
			out = append(out, d.domain())
		}
	}
	return out, nil
}

// InsertTag implements tag.Store. The category is checked again after the
// insert: a category deleted in between would otherwise leave a tag its
// deletion did not see.
func (s *Store) InsertTag(ctx context.Context, t tag.Tag, key *idempotency.Claim) error {
	c, err := s.category(ctx, t.CategoryID)
	if err != nil {
		return err
	}
	doc := tagDoc{
		OID: bson.NewObjectID(), ID: t.ID, Name: t.Name, NameKey: tag.NameKey(t.Name),
		CategoryID: t.CategoryID, CategoryRef: c.OID, Seq: seq(), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		Stamp: idemstore.StampOf(key),
	}
	defer s.rev.Bump(ctx)
	if err := s.insert(ctx, s.tags, tag.KindTag, t.ID, doc, key); err != nil {
		return err
	}
	n, err := s.categories.CountDocuments(ctx, bson.M{"_id": c.OID, "deletedAt": bson.M{"$exists": false}})
	if err != nil {
		return err
	}
	if n == 0 {
		if err := s.tombstoneTag(ctx, doc, t.CreatedAt); err != nil && !errors.Is(err, tag.ErrTagNotFound) {
			return err
		}
		// The caller was told no tag was made (422, not kept): the key must
		// not hold this tombstone, or a retry once the category is back
		// would be told its tag was created and deleted since.
		if key != nil {
			if _, err := s.tags.UpdateOne(ctx, bson.M{"_id": doc.OID}, idemstore.Unstamp()); err != nil {
				return err
			}
		}
		return tag.ErrCategoryNotFound
	}
	return nil
}

// RenameTag implements tag.Store.
func (s *Store) RenameTag(ctx context.Context, id, name string, at time.Time) (tag.Tag, error) {
	if _, err := s.Tag(ctx, id); err != nil {
		return tag.Tag{}, err
	}
	defer s.rev.Bump(ctx)
	if err := rename(ctx, s.tags, id, name, at); err != nil {
		if errors.Is(err, tag.ErrCategoryNotFound) {
			err = tag.ErrTagNotFound
		}
		return tag.Tag{}, err
	}
	return s.Tag(ctx, id)
}

// DeleteTag implements tag.Store.
func (s *Store) DeleteTag(ctx context.Context, id string, at time.Time) error {
	var d tagDoc
	err := s.tags.FindOne(ctx, liveByID(id)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return tag.ErrTagNotFound
	}
	if err != nil {
		return err
	}
	// A tag of a category being deleted is already gone for callers (Sweep
	// deletes it with its event).
	n, err := s.categories.CountDocuments(ctx, bson.M{"_id": d.CategoryRef, "deletedAt": bson.M{"$exists": false}})
	if err != nil {
		return err
	}
	if n == 0 {
		return tag.ErrTagNotFound
	}
	defer s.rev.Bump(ctx)
	return s.tombstoneTag(ctx, d, at)
}

// Sweep finishes deletions: tags of deleted categories are deleted (with
// their events), and tombstones whose events have all been published and
// whose Idempotency-Key (if any) has expired are removed; expired keys are
// taken off records (at most once a keySweepEvery). Run it after the relay
// has published; it is idempotent.
func (s *Store) Sweep(ctx context.Context) error {
	now := s.now()
	if err := s.keys.Run(ctx, now, nil, s.categories, s.tags); err != nil {
		return err
	}
	var cats []categoryDoc
	if err := find(ctx, s.categories, bson.M{"deletedAt": bson.M{"$exists": true}}, nil, &cats); err != nil {
		return err
	}
	for _, c := range cats {
		if err := s.deleteTagsOf(ctx, c.OID, *c.DeletedAt); err != nil {
			return err
		}
	}
	published := bson.M{"$or": bson.A{bson.M{outbox.CountField: bson.M{"$exists": false}}, bson.M{outbox.CountField: 0}}}
	// A tombstone holding a key not expired stays: a retry of the create
	// under it must learn the record was deleted, not make it again.
	done := bson.M{"deletedAt": bson.M{"$exists": true}, "$and": bson.A{published, idemstore.Unstamped(now)}}
	if _, err := s.tags.DeleteMany(ctx, done); err != nil {
		return err
	}
	for _, c := range cats {
		n, err := s.tags.CountDocuments(ctx, bson.M{"categoryRef": c.OID})
		if err != nil {
			return err
		}
		if n > 0 {
			continue // its tags' events are not all published yet
		}
		filter := bson.M{"_id": c.OID}
		for k, v := range done {
			filter[k] = v
		}
		if _, err := s.categories.DeleteOne(ctx, filter); err != nil {
			return err
		}
	}
	return nil
}

func find(ctx context.Context, coll *mongo.Collection, filter any, opts *options.FindOptionsBuilder, out any) error {
	var cur *mongo.Cursor
	var err error
	if opts != nil {
		cur, err = coll.Find(ctx, filter, opts)
	} else {
		cur, err = coll.Find(ctx, filter)
	}
	if err != nil {
		return err
	}
	return cur.All(ctx, out)
}
