package mongostore

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/events"
)

// upgrade finishes what a store from before transactions left: its
// deleted records stayed as tombstones keeping their events in themselves
// until published, and a category's tags were deleted after it, one by
// one. The events move to the outbox, a deleted category's remaining tags
// are deleted with their events, and the tombstones go. It does nothing
// once none is left.
func (s *Store) upgrade(ctx context.Context) error {
	for _, coll := range []*mongo.Collection{s.categories, s.tags} {
		if _, err := s.outbox.MoveLegacy(ctx, s.db.Client(), coll); err != nil {
			return err
		}
	}
	var cats []struct {
		OID       bson.ObjectID `bson:"_id"`
		DeletedID string        `bson:"deletedId"`
		DeletedAt time.Time     `bson:"deletedAt"`
	}
	if err := find(ctx, s.categories, bson.M{"deletedAt": bson.M{"$exists": true}}, nil, &cats); err != nil {
		return fmt.Errorf("deleted categories: %w", err)
	}
	for _, c := range cats {
		err := s.inTx(ctx, func(ctx context.Context) error {
			tags, err := s.tagsOf(ctx, c.OID)
			if err != nil {
				return err
			}
			for _, t := range tags {
				ev, err := events.New(ctx, Source, events.TagDeleted, events.TagDeletedData{TagID: t.ID, CategoryID: c.DeletedID}, c.DeletedAt)
				if err != nil {
					return err
				}
				if err := s.outbox.Add(ctx, ev); err != nil {
					return err
				}
			}
			if _, err := s.tags.DeleteMany(ctx, bson.M{"categoryRef": c.OID}); err != nil {
				return err
			}
			_, err = s.categories.DeleteOne(ctx, bson.M{"_id": c.OID})
			return err
		})
		if err != nil {
			return fmt.Errorf("finish the deletion of category %s: %w", c.DeletedID, err)
		}
	}
	_, err := s.tags.DeleteMany(ctx, bson.M{"deletedAt": bson.M{"$exists": true}})
	return err
}
