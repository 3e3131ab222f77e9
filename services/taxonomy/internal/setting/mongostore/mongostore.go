// Package mongostore keeps the public settings in MongoDB: one document
// ({_id: "public"}) in collection settings, whose rev field moves with
// every write in the same update, so replicas' renderings can tell with
// one small read whether it changed. Every write records the
// library.taxonomy.config.changed event in the outbox, in its transaction.
// bson shapes live only here.
package mongostore

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/services/taxonomy/internal/setting"
)

const id = "public"

// Source is the CloudEvents source of the settings' events (the
// taxonomy's).
const Source = "/taxonomy"

// Store implements setting.Store.
type Store struct {
	coll   *mongo.Collection
	outbox *outbox.Outbox
}

var _ setting.Store = (*Store)(nil)

// New returns a Store on db whose writes record their events in box.
func New(db *mongo.Database, box *outbox.Outbox) *Store {
	return &Store{coll: db.Collection("settings"), outbox: box}
}

// record adds the event of a write of v to the outbox, in the write's
// transaction (ctx).
func (s *Store) record(ctx context.Context, v setting.Settings) error {
	at := v.UpdatedAt
	if at.IsZero() {
		at = time.Now().UTC().Truncate(time.Millisecond)
	}
	ev, err := events.New(ctx, Source, events.ConfigChanged,
		events.ConfigChangedData{ModeratorEmail: v.ModeratorEmail, Actor: v.UpdatedBy}, at)
	if err != nil {
		return err
	}
	return s.outbox.Add(ctx, ev)
}

type doc struct {
	ModeratorEmail string    `bson:"moderatorEmail"`
	UpdatedAt      time.Time `bson:"updatedAt"`
	UpdatedBy      string    `bson:"updatedBy"`
	Rev            int64     `bson:"rev"`
}

// Get implements setting.Store.
func (s *Store) Get(ctx context.Context) (setting.Settings, bool, error) {
	var d doc
	err := s.coll.FindOne(ctx, bson.M{"_id": id}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return setting.Settings{}, false, nil
	}
	if err != nil {
		return setting.Settings{}, false, err
	}
	return setting.Settings{ModeratorEmail: d.ModeratorEmail, UpdatedAt: d.UpdatedAt.UTC(), UpdatedBy: d.UpdatedBy}, true, nil
}

// Put implements setting.Store: one upsert, atomic with its revision, in
// one transaction with the read check needs.
func (s *Store) Put(ctx context.Context, v setting.Settings, check func(setting.Settings, bool) error) error {
	return mongox.InTx(ctx, s.coll.Database().Client(), func(ctx context.Context) error {
		if check != nil {
			got, found, err := s.Get(ctx)
			if err != nil {
				return err
			}
			if err := check(got, found); err != nil {
				return err
			}
		}
		_, err := s.coll.UpdateOne(ctx, bson.M{"_id": id}, bson.M{
			"$set": bson.M{"moderatorEmail": v.ModeratorEmail, "updatedAt": v.UpdatedAt, "updatedBy": v.UpdatedBy},
			"$inc": bson.M{"rev": int64(1)},
		}, options.UpdateOne().SetUpsert(true))
		if err != nil {
			return err
		}
		return s.record(ctx, v)
	})
}

// Create implements setting.Store: one insert of the record, refused by
// its _id when the settings are set.
func (s *Store) Create(ctx context.Context, v setting.Settings) (bool, error) {
	err := mongox.InTx(ctx, s.coll.Database().Client(), func(ctx context.Context) error {
		_, err := s.coll.InsertOne(ctx, bson.M{"_id": id, "moderatorEmail": v.ModeratorEmail, "updatedAt": v.UpdatedAt,
			"updatedBy": v.UpdatedBy, "rev": int64(1)})
		if err != nil {
			return err
		}
		return s.record(ctx, v)
	})
	if mongo.IsDuplicateKeyError(err) {
		return false, nil
	}
	return err == nil, err
}

// Revision returns a number that moves with every Put (0 before the first).
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var d struct {
		Rev int64 `bson:"rev"`
	}
	err := s.coll.FindOne(ctx, bson.M{"_id": id}, options.FindOne().SetProjection(bson.M{"rev": 1})).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return d.Rev, err
}
