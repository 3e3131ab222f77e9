// Package mongostore keeps the taxonomy in MongoDB: collections categories
// and tags, the revision that moves after every write of them (collection
// meta), and the event of every change (the outbox). bson shapes live only
// here.
//
// Every write is one transaction with its events: a deletion removes the
// records and records their events together, and a write that must see the taxonomy as
// it is (If-Match) reads it in the same transaction. Records have an
// internal _id; the caller-supplied id is a uniquely indexed field. Tags
// point to their category's internal _id, so a category deleted and
// created again under the same id never inherits old tags.
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
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// Source is the CloudEvents source of the taxonomy's events.
const Source = "/taxonomy"

// Store implements tag.Store.
type Store struct {
	db         *mongo.Database
	categories *mongo.Collection
	tags       *mongo.Collection
	rev        *mongox.Revision
	outbox     *outbox.Outbox
}

var _ tag.Store = (*Store)(nil)

// New returns a Store on db whose deletions record their events in box.
// Call EnsureIndexes once at start-up. log receives the failures of
// revision bumps, which never fail a write.
func New(db *mongo.Database, box *outbox.Outbox, log *slog.Logger) *Store {
	return &Store{db: db, categories: db.Collection("categories"), tags: db.Collection("tags"),
		rev: mongox.NewRevision(db.Collection("meta"), "taxonomy", log), outbox: box}
}

// inTx runs fn in one transaction (or the request's, mongox.InTx); the
// revision moves once it has committed, so that no replica renders the
// categories anew before the change is there to be read.
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context) error) error {
	bump := context.WithoutCancel(ctx)
	return mongox.InTx(ctx, s.db.Client(), func(ctx context.Context) error {
		mongox.OnCommit(ctx, func() { s.rev.Bump(bump) })
		return fn(ctx)
	})
}

// Revision returns a number that moves after every write of a category or
// tag (collection meta), so that every replica's rendering of the
// categories can tell, with one small read, whether it must render again.
// Each write moves it once it has committed.
func (s *Store) Revision(ctx context.Context) (int64, error) { return s.rev.Get(ctx) }

// EnsureIndexes creates the indexes, and finishes the deletions of a store
// from before transactions (upgrade); it is idempotent and safe when
// several replicas start together.
func (s *Store) EnsureIndexes(ctx context.Context) error {
	if err := s.upgrade(ctx); err != nil {
		return err
	}
	if err := mongox.EnsureIndexes(ctx, s.categories,
		mongox.Index("id_unique", true, "id"),
		mongox.Index("nameKey_unique", true, "nameKey"),
		mongox.Index("seq", false, "seq"),
	); err != nil {
		return err
	}
	return mongox.EnsureIndexes(ctx, s.tags,
		mongox.Index("id_unique", true, "id"),
		mongox.Index("category_nameKey_unique", true, "categoryRef", "nameKey"),
		mongox.Index("seq", false, "seq"),
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
}

func (d categoryDoc) domain() tag.Category {
	return tag.Category{ID: d.ID, Name: d.Name, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), Tags: []tag.Tag{}}
}

func (d tagDoc) domain() tag.Tag {
	return tag.Tag{ID: d.ID, Name: d.Name, CategoryID: d.CategoryID, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
}

// live leaves out the tombstones that stores before transactions kept
// until their events were published (they are removed at start-up).
var (
	live  = bson.M{"deletedAt": bson.M{"$exists": false}}
	bySeq = options.Find().SetSort(bson.D{{Key: "seq", Value: 1}, {Key: "_id", Value: 1}})
)

// seq orders records by creation; ties (same nanosecond on two replicas)
// are broken by _id, so the order is stable.
func seq() int64 { return time.Now().UnixNano() }

func liveByID(id string) bson.M { return bson.M{"id": id, "deletedAt": bson.M{"$exists": false}} }

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

func (s *Store) tagsOf(ctx context.Context, ref bson.ObjectID) ([]tagDoc, error) {
	var tags []tagDoc
	err := find(ctx, s.tags, bson.M{"categoryRef": ref, "deletedAt": bson.M{"$exists": false}}, bySeq, &tags)
	return tags, err
}

func (s *Store) withTags(ctx context.Context, c categoryDoc) (tag.Category, error) {
	tags, err := s.tagsOf(ctx, c.OID)
	if err != nil {
		return tag.Category{}, err
	}
	out := c.domain()
	for _, t := range tags {
		out.Tags = append(out.Tags, t.domain())
	}
	return out, nil
}

// InsertCategory implements tag.Store.
func (s *Store) InsertCategory(ctx context.Context, c tag.Category) error {
	doc := categoryDoc{
		OID: bson.NewObjectID(), ID: c.ID, Name: c.Name, NameKey: tag.NameKey(c.Name),
		Seq: seq(), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	return s.inTx(ctx, func(ctx context.Context) error {
		if err := insert(ctx, s.categories, c.ID, doc); err != nil {
			return err
		}
		return s.record(ctx, events.CategoryCreated,
			events.CategoryData{CategoryID: c.ID, Name: c.Name, Actor: identity.Name(ctx)}, c.CreatedAt)
	})
}

// record adds the event of a change to the outbox, in the change's
// transaction (ctx).
func (s *Store) record(ctx context.Context, subject string, data any, at time.Time) error {
	ev, err := events.New(ctx, Source, subject, data, at)
	if err != nil {
		return err
	}
	return s.outbox.Add(ctx, ev)
}

// duplicate tells a taken id from a taken name after a unique-index
// violation: MongoDB names the index's keys in the error (keyPattern). The
// inserts look for a taken id first, in their transaction, so any other
// violation is the name's.
func duplicate(err error) error {
	if !mongo.IsDuplicateKeyError(err) {
		return err
	}
	var we mongo.WriteException
	if errors.As(err, &we) {
		for _, e := range we.WriteErrors {
			if keys, ok := e.Raw.Lookup("keyPattern").DocumentOK(); ok && keys.Lookup("id").Type != 0 {
				return tag.ErrDuplicateID
			}
		}
	}
	return tag.ErrDuplicateName
}

// insert stores doc in coll unless its id is taken (ErrDuplicateID) or its
// name (ErrDuplicateName), in the transaction of ctx.
func insert(ctx context.Context, coll *mongo.Collection, id string, doc any) error {
	switch err := coll.FindOne(ctx, bson.M{"id": id}, options.FindOne().SetProjection(bson.M{"_id": 1})).Err(); {
	case err == nil:
		return tag.ErrDuplicateID
	case !errors.Is(err, mongo.ErrNoDocuments):
		return err
	}
	_, err := coll.InsertOne(ctx, doc)
	return duplicate(err)
}

// RenameCategory implements tag.Store.
func (s *Store) RenameCategory(ctx context.Context, id, name string, at time.Time, check tag.Check) (tag.Category, error) {
	var out tag.Category
	err := s.inTx(ctx, func(ctx context.Context) error {
		if err := s.check(ctx, check); err != nil {
			return err
		}
		if err := rename(ctx, s.categories, id, name, at); err != nil {
			return err
		}
		c, err := s.category(ctx, id)
		if err != nil {
			return err
		}
		if out, err = s.withTags(ctx, c); err != nil {
			return err
		}
		return s.record(ctx, events.CategoryRenamed,
			events.CategoryData{CategoryID: id, Name: out.Name, Actor: identity.Name(ctx)}, at)
	})
	return out, err
}

// check runs check, if any, on the taxonomy as the transaction of ctx
// sees it.
func (s *Store) check(ctx context.Context, check tag.Check) error {
	if check == nil {
		return nil
	}
	cats, err := s.Categories(ctx)
	if err != nil {
		return err
	}
	return check(cats)
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

// DeleteCategory implements tag.Store: the category, its tags and their
// events go in one transaction.
func (s *Store) DeleteCategory(ctx context.Context, id string, at time.Time) error {
	return s.inTx(ctx, func(ctx context.Context) error {
		c, err := s.category(ctx, id)
		if err != nil {
			return err
		}
		tags, err := s.tagsOf(ctx, c.OID)
		if err != nil {
			return err
		}
		actor := identity.Name(ctx)
		ids := make([]string, len(tags))
		evs := make([]events.Event, 0, len(tags)+1)
		for i, t := range tags {
			ids[i] = t.ID
			ev, err := events.New(ctx, Source, events.TagDeleted, events.TagDeletedData{TagID: t.ID, CategoryID: id, Actor: actor}, at)
			if err != nil {
				return err
			}
			evs = append(evs, ev)
		}
		ev, err := events.New(ctx, Source, events.CategoryDeleted, events.CategoryDeletedData{CategoryID: id, TagsIDs: ids, Actor: actor}, at)
		if err != nil {
			return err
		}
		if _, err := s.tags.DeleteMany(ctx, bson.M{"categoryRef": c.OID}); err != nil {
			return err
		}
		if _, err := s.categories.DeleteOne(ctx, bson.M{"_id": c.OID}); err != nil {
			return err
		}
		return s.outbox.Add(ctx, append([]events.Event{ev}, evs...)...)
	})
}

// Tag implements tag.Store.
func (s *Store) Tag(ctx context.Context, id string) (tag.Tag, error) {
	var d tagDoc
	err := s.tags.FindOne(ctx, liveByID(id)).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return tag.Tag{}, tag.ErrTagNotFound
	}
	if err != nil {
		return tag.Tag{}, err
	}
	return d.domain(), nil
}

// Tags implements tag.Store.
func (s *Store) Tags(ctx context.Context, ids []string) ([]tag.Tag, error) {
	var docs []tagDoc
	if err := find(ctx, s.tags, bson.M{"id": bson.M{"$in": ids}, "deletedAt": bson.M{"$exists": false}}, nil, &docs); err != nil {
		return nil, err
	}
	out := make([]tag.Tag, len(docs))
	for i, d := range docs {
		out[i] = d.domain()
	}
	return out, nil
}

// InsertTag implements tag.Store. The category is read in the insert's
// transaction: a deletion of it either commits first (the tag is refused)
// or after (and deletes the tag with it).
func (s *Store) InsertTag(ctx context.Context, t tag.Tag) error {
	return s.inTx(ctx, func(ctx context.Context) error {
		c, err := s.category(ctx, t.CategoryID)
		if err != nil {
			return err
		}
		doc := tagDoc{
			OID: bson.NewObjectID(), ID: t.ID, Name: t.Name, NameKey: tag.NameKey(t.Name),
			CategoryID: t.CategoryID, CategoryRef: c.OID, Seq: seq(), CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		}
		if err := insert(ctx, s.tags, t.ID, doc); err != nil {
			return err
		}
		return s.record(ctx, events.TagCreated,
			events.TagData{TagID: t.ID, CategoryID: t.CategoryID, Name: t.Name, Actor: identity.Name(ctx)}, t.CreatedAt)
	})
}

// RenameTag implements tag.Store.
func (s *Store) RenameTag(ctx context.Context, id, name string, at time.Time, check tag.Check) (tag.Tag, error) {
	var out tag.Tag
	err := s.inTx(ctx, func(ctx context.Context) error {
		if err := s.check(ctx, check); err != nil {
			return err
		}
		if err := rename(ctx, s.tags, id, name, at); err != nil {
			if errors.Is(err, tag.ErrCategoryNotFound) {
				err = tag.ErrTagNotFound
			}
			return err
		}
		var err error
		if out, err = s.Tag(ctx, id); err != nil {
			return err
		}
		return s.record(ctx, events.TagRenamed,
			events.TagData{TagID: id, CategoryID: out.CategoryID, Name: out.Name, Actor: identity.Name(ctx)}, at)
	})
	return out, err
}

// DeleteTag implements tag.Store: the tag and its event in one
// transaction.
func (s *Store) DeleteTag(ctx context.Context, id string, at time.Time) error {
	return s.inTx(ctx, func(ctx context.Context) error {
		t, err := s.Tag(ctx, id)
		if err != nil {
			return err
		}
		if _, err := s.tags.DeleteOne(ctx, liveByID(id)); err != nil {
			return err
		}
		return s.record(ctx, events.TagDeleted,
			events.TagDeletedData{TagID: t.ID, CategoryID: t.CategoryID, Actor: identity.Name(ctx)}, at)
	})
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
