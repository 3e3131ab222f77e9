// Package mongostore keeps media records in MongoDB, collection medias, and
// the revision that moves whenever a record is shown or hidden (collection
// meta). bson shapes live only here.
//
// The media id is the document's _id (server-made and random, so never
// reused). A deletion first sets deletingAt and deletingBy (a token of the
// deleting request), which hides the record; then one transaction turns it
// into a tombstone (deletedAt) and records the library.media.deleted event
// in the outbox (an insert records library.media.uploaded in its own). The tombstone says which objects are left to remove: the
// deletion removes them and then it; should that fail, Sweep does.
//
// One live media per content: digest, under a unique index, is
// "sha256:<hex>" while the record is live or being deleted, and a key of its
// own once it is a tombstone, so the same bytes can be uploaded again after
// a deletion. Upload intents live in collection uploads (uploads.go).
package mongostore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/services/media/internal/media"
)

// Source is the CloudEvents source of the media service's events.
const Source = "/media"

// CollectionName is where records live.
const CollectionName = "medias"

// Store implements media.Store.
type Store struct {
	db      *mongo.Database
	outbox  *outbox.Outbox
	coll    *mongo.Collection
	uploads *mongo.Collection
	rev     *mongox.Revision
	log     *slog.Logger
}

var _ media.Store = (*Store)(nil)

// New returns a Store on db whose deletions record their events in box.
// Call EnsureIndexes once at start-up. log receives the failures of
// revision bumps, which never fail a write.
func New(db *mongo.Database, box *outbox.Outbox, log *slog.Logger) *Store {
	return &Store{db: db, coll: db.Collection(CollectionName), uploads: db.Collection(UploadsCollection),
		rev: mongox.NewRevision(db.Collection("meta"), CollectionName, log), log: log, outbox: box}
}

// inTx runs fn in one transaction (or the request's: an upload's record
// commits with its Idempotency-Key's answer, mongox.InTx).
func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return mongox.InTx(ctx, s.db.Client(), fn)
}

// Revision returns a number that moves after every write that shows or
// hides a record (collection meta), so that every replica's renderings of
// the records can tell, with one small read, whether to render again.
func (s *Store) Revision(ctx context.Context) (int64, error) { return s.rev.Get(ctx) }

// Collection is the records' collection, for the outbox relay.
func (s *Store) Collection() *mongo.Collection { return s.coll }

// EnsureIndexes creates the indexes; it is idempotent and safe when several
// replicas start together.
// Records stored before digests were unique get their digest first.
func (s *Store) EnsureIndexes(ctx context.Context) error {
	// Tombstones from before transactions kept their event in themselves.
	if _, err := s.outbox.MoveLegacy(ctx, s.db.Client(), s.coll); err != nil {
		return err
	}
	if err := s.giveDigests(ctx); err != nil {
		return fmt.Errorf("give digests to older records: %w", err)
	}
	if err := mongox.EnsureIndexes(ctx, s.coll,
		mongox.Index("createdAt", false, "createdAt"),
		mongox.Index("deletingAt", false, "deletingAt"),
		mongox.Index("deletedAt", false, "deletedAt"),
		mongox.Index("digest_unique", true, "digest"),
		mongox.Index("objectKey", false, "objectKey"),
	); err != nil {
		return err
	}
	return mongox.EnsureIndexes(ctx, s.uploads, mongox.Index("startedAt", false, "startedAt"))
}

// digestOf is the unique key of a live record's content.
func digestOf(sha256 string) string { return "sha256:" + sha256 }

// tombstoneDigest frees a deleted record's digest; '~' is not hex.
func tombstoneDigest(id string) string { return "~deleted~" + id }

// giveDigests sets the digest of records stored before it existed, oldest
// first: the first live record of each content gets it, later copies (the
// same bytes uploaded twice back then) and tombstones a key of their own.
// Idempotent; replicas starting together may both run it.
func (s *Store) giveDigests(ctx context.Context) error {
	cur, err := s.coll.Find(ctx, bson.M{"digest": absent}, options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}}))
	if err != nil {
		return err
	}
	var docs []mediaDoc
	if err := cur.All(ctx, &docs); err != nil {
		return err
	}
	for _, d := range docs {
		key := tombstoneDigest(d.ID)
		if d.DeletedAt == nil {
			switch n, err := s.coll.CountDocuments(ctx, bson.M{"digest": digestOf(d.SHA256)}); {
			case err != nil:
				return err
			case n == 0:
				key = digestOf(d.SHA256)
			default:
				key = "~copy~" + d.ID
			}
		}
		if _, err := s.coll.UpdateOne(ctx, bson.M{"_id": d.ID, "digest": absent}, bson.M{"$set": bson.M{"digest": key}}); err != nil {
			return err
		}
	}
	if len(docs) > 0 {
		s.log.Info("gave digests to records stored before they were unique", "count", len(docs))
	}
	return nil
}

type mediaDoc struct {
	ID        string `bson:"_id"`
	Name      string `bson:"name"`
	MimeType  string `bson:"mimeType"`
	Size      int64  `bson:"size"`
	ObjectKey string `bson:"objectKey"`
	SHA256    string `bson:"sha256"`
	Digest    string `bson:"digest"`
	Width     int    `bson:"width,omitempty"`
	Height    int    `bson:"height,omitempty"`
	// A PDF's page count and first page's size (points).
	Pages      int     `bson:"pages,omitempty"`
	PageWidth  float64 `bson:"pageWidth,omitempty"`
	PageHeight float64 `bson:"pageHeight,omitempty"`
	// Sized is set (false) on an image whose header could not be read when
	// an older record was sized, so it is not tried again.
	Sized      *bool      `bson:"sized,omitempty"`
	CreatedAt  time.Time  `bson:"createdAt"`
	UpdatedAt  time.Time  `bson:"updatedAt"`
	CreatedBy  string     `bson:"createdBy,omitempty"`
	UpdatedBy  string     `bson:"updatedBy,omitempty"`
	DeletingAt *time.Time `bson:"deletingAt,omitempty"`
	DeletingBy string     `bson:"deletingBy,omitempty"`
	DeletedAt  *time.Time `bson:"deletedAt,omitempty"`
}

func toDoc(m media.Media) mediaDoc {
	return mediaDoc{
		ID: m.ID, Name: m.Name, MimeType: m.MimeType, Size: m.Size, ObjectKey: m.ObjectKey, SHA256: m.SHA256,
		Digest: digestOf(m.SHA256), Width: m.Width, Height: m.Height,
		Pages: m.Pages, PageWidth: m.PageWidth, PageHeight: m.PageHeight,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt, CreatedBy: m.CreatedBy, UpdatedBy: m.UpdatedBy,
	}
}

func (d mediaDoc) domain() media.Media {
	return media.Media{
		ID: d.ID, Name: d.Name, MimeType: d.MimeType, Size: d.Size, ObjectKey: d.ObjectKey, SHA256: d.SHA256,
		Width: d.Width, Height: d.Height, Pages: d.Pages, PageWidth: d.PageWidth, PageHeight: d.PageHeight,
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC(), CreatedBy: d.CreatedBy, UpdatedBy: d.UpdatedBy,
		Deleting: d.DeletingAt != nil,
	}
}

var absent = bson.M{"$exists": false}

// live matches records neither being deleted nor deleted.
func live(filter bson.M) bson.M {
	filter["deletingAt"] = absent
	filter["deletedAt"] = absent
	return filter
}

// tombstone matches deleted records.
func tombstone(filter bson.M) bson.M {
	filter["deletedAt"] = bson.M{"$exists": true}
	return filter
}

// Insert implements media.Store: the record, the end of its upload's
// intent and the library.media.uploaded event, in one transaction.
func (s *Store) Insert(ctx context.Context, m media.Media) error {
	bump := context.WithoutCancel(ctx)
	ev, err := events.New(ctx, Source, events.MediaUploaded, events.MediaUploadedData{MediaID: m.ID, Name: m.Name,
		MimeType: m.MimeType, Size: m.Size, SHA256: m.SHA256, Actor: identity.Name(ctx)}, m.CreatedAt)
	if err != nil {
		return err
	}
	err = s.inTx(ctx, func(ctx context.Context) error {
		if _, err := s.coll.InsertOne(ctx, toDoc(m)); err != nil {
			return err
		}
		mongox.OnCommit(ctx, func() { s.rev.Bump(bump) })
		if _, err := s.uploads.DeleteOne(ctx, bson.M{"_id": m.ObjectKey}); err != nil {
			return err
		}
		return s.outbox.Add(ctx, ev)
	})
	if mongo.IsDuplicateKeyError(err) {
		return media.ErrDuplicate // the digest: ids are random
	}
	return err
}

// ByDigest implements media.Store.
func (s *Store) ByDigest(ctx context.Context, sha256 string) (media.Media, error) {
	var d mediaDoc
	err := s.coll.FindOne(ctx, bson.M{"digest": digestOf(sha256), "deletedAt": absent}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return media.Media{}, media.ErrNotFound
	}
	if err != nil {
		return media.Media{}, err
	}
	return d.domain(), nil
}

// Get implements media.Store.
func (s *Store) Get(ctx context.Context, id string) (media.Media, error) {
	var d mediaDoc
	err := s.coll.FindOne(ctx, live(bson.M{"_id": id})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return media.Media{}, media.ErrNotFound
	}
	if err != nil {
		return media.Media{}, err
	}
	return d.domain(), nil
}

// List implements media.Store.
func (s *Store) List(ctx context.Context) ([]media.Media, error) {
	newest := options.Find().SetSort(bson.D{{Key: "createdAt", Value: -1}, {Key: "_id", Value: -1}})
	return s.find(ctx, live(bson.M{}), newest)
}

// Lookup implements media.Store: live records and records being deleted.
func (s *Store) Lookup(ctx context.Context, ids []string) ([]media.Media, error) {
	return s.find(ctx, bson.M{"_id": bson.M{"$in": ids}, "deletedAt": absent}, nil)
}

// MarkDeleting implements media.Store.
func (s *Store) MarkDeleting(ctx context.Context, id, token string, at time.Time) (media.Media, error) {
	defer s.rev.Bump(ctx)
	var d mediaDoc
	err := s.coll.FindOneAndUpdate(ctx, live(bson.M{"_id": id}),
		bson.M{"$set": bson.M{"deletingAt": at, "deletingBy": token}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return media.Media{}, media.ErrNotFound
	}
	if err != nil {
		return media.Media{}, err
	}
	return d.domain(), nil
}

func heldBy(id, token string) bson.M {
	return bson.M{"_id": id, "deletingBy": token, "deletedAt": absent}
}

// ClearDeleting implements media.Store.
func (s *Store) ClearDeleting(ctx context.Context, id, token string) error {
	defer s.rev.Bump(ctx)
	_, err := s.coll.UpdateOne(ctx, heldBy(id, token), bson.M{"$unset": bson.M{"deletingAt": "", "deletingBy": ""}})
	return err
}

// Tombstone implements media.Store.
func (s *Store) Tombstone(ctx context.Context, id, token string, at time.Time) error {
	ev, err := events.New(ctx, Source, events.MediaDeleted, events.MediaDeletedData{MediaID: id, Actor: identity.Name(ctx)}, at)
	if err != nil {
		return err
	}
	update := bson.M{"$set": bson.M{"deletedAt": at, "updatedAt": at, "digest": tombstoneDigest(id)}}
	return s.inTx(ctx, func(ctx context.Context) error {
		res, err := s.coll.UpdateOne(ctx, heldBy(id, token), update)
		if err != nil {
			return err
		}
		if res.MatchedCount == 0 {
			return media.ErrMarkLost // cleared as stuck meanwhile
		}
		return s.outbox.Add(ctx, ev)
	})
}

// ReleaseStuck implements media.Store.
func (s *Store) ReleaseStuck(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.coll.UpdateMany(ctx,
		bson.M{"deletingAt": bson.M{"$lt": cutoff}, "deletedAt": absent},
		bson.M{"$unset": bson.M{"deletingAt": "", "deletingBy": ""}})
	if err != nil {
		return 0, err
	}
	if res.ModifiedCount > 0 {
		s.rev.Bump(ctx)
	}
	return res.ModifiedCount, nil
}

// Sweepable implements media.Store.
func (s *Store) Sweepable(ctx context.Context) ([]media.Media, error) {
	return s.find(ctx, tombstone(bson.M{}), nil)
}

// RemoveTombstone implements media.Store.
func (s *Store) RemoveTombstone(ctx context.Context, id string) error {
	_, err := s.coll.DeleteOne(ctx, tombstone(bson.M{"_id": id}))
	return err
}

func (s *Store) find(ctx context.Context, filter bson.M, opts *options.FindOptionsBuilder) ([]media.Media, error) {
	var cur *mongo.Cursor
	var err error
	if opts != nil {
		cur, err = s.coll.Find(ctx, filter, opts)
	} else {
		cur, err = s.coll.Find(ctx, filter)
	}
	if err != nil {
		return nil, err
	}
	var docs []mediaDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := make([]media.Media, len(docs))
	for i, d := range docs {
		out[i] = d.domain()
	}
	return out, nil
}

// Unsized implements media.Store.
func (s *Store) Unsized(ctx context.Context, types []string, limit int) ([]media.Media, error) {
	oldest := options.Find().SetSort(bson.D{{Key: "createdAt", Value: 1}}).SetLimit(int64(limit))
	return s.find(ctx, live(bson.M{"mimeType": bson.M{"$in": types}, "width": absent, "sized": absent}), oldest)
}

// SetSize implements media.Store.
func (s *Store) SetSize(ctx context.Context, id string, width, height int) error {
	set := bson.M{"width": width, "height": height}
	if width <= 0 || height <= 0 {
		set = bson.M{"sized": false}
	}
	res, err := s.coll.UpdateOne(ctx, bson.M{"_id": id}, bson.M{"$set": set})
	if err == nil && res.ModifiedCount > 0 {
		s.rev.Bump(ctx)
	}
	return err
}
