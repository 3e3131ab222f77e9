package mongostore

import (
	"context"
	"fmt"
	"log/slog"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/services/taxonomy/internal/tag"
)

// keyedName is what RekeyNames reads of a live category or tag.
type keyedName struct {
	OID         bson.ObjectID `bson:"_id"`
	ID          string        `bson:"id"`
	Name        string        `bson:"name"`
	NameKey     string        `bson:"nameKey"`
	CategoryRef bson.ObjectID `bson:"categoryRef"`
}

// RekeyNames brings the name keys of live categories and tags stored under
// an earlier tag.NameKey up to the current one, at start-up (the taxonomy
// is small: a few hundred records). A record whose new key another record
// already holds (two names stored apart that now look the same) keeps its
// old key, logged, until an editor renames one of them: nothing is
// renamed or merged for them. Several replicas may run it at once: each
// update applies only to the key it read.
func (s *Store) RekeyNames(ctx context.Context, log *slog.Logger) error {
	if err := rekeyNames(ctx, s.categories, log); err != nil {
		return err
	}
	return rekeyNames(ctx, s.tags, log)
}

func rekeyNames(ctx context.Context, coll *mongo.Collection, log *slog.Logger) error {
	var docs []keyedName
	proj := options.Find().SetProjection(bson.M{"id": 1, "name": 1, "nameKey": 1, "categoryRef": 1})
	if err := find(ctx, coll, live, proj, &docs); err != nil {
		return fmt.Errorf("read %s names: %w", coll.Name(), err)
	}
	// Unique per collection for categories, per category for tags (a
	// category's CategoryRef is the zero id).
	held := func(d keyedName, key string) string { return d.CategoryRef.Hex() + "\x00" + key }
	taken := make(map[string]bool, len(docs))
	for _, d := range docs {
		taken[held(d, d.NameKey)] = true
	}
	for _, d := range docs {
		key := tag.NameKey(d.Name)
		switch {
		case key == d.NameKey:
			continue
		case taken[held(d, key)]:
			log.Warn("a name looks the same as another's and keeps its old key until one of them is renamed",
				"collection", coll.Name(), "id", d.ID, "name", d.Name)
			continue
		}
		_, err := coll.UpdateOne(ctx, bson.M{"_id": d.OID, "nameKey": d.NameKey}, bson.M{"$set": bson.M{"nameKey": key}})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			// Another replica, or a write meanwhile, took the key first.
			log.Warn("a name key was not brought up to date", "collection", coll.Name(), "id", d.ID, "error", err)
			continue
		}
		delete(taken, held(d, d.NameKey))
		taken[held(d, key)] = true
	}
	return nil
}
