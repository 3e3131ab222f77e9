package mongostore

// The reference guards of document/refs.go: one record per tag or media id
// (collection refguards, _id "tag:<id>" or "media:<id>") whose counter n a
// deletion raises before it looks for the documents naming the id. A save
// reads the guards of the references it may add before it asks taxonomy
// and media about them, and its transaction checks they are unchanged and
// writes them: a deletion that raised one in between makes the save run
// again (and its check then sees the deletion), and a deletion and a save
// whose transactions overlap write the same record, so on MongoDB one of
// them waits for or retries after the other.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/services/catalog/internal/document"
)

// guardIDs are the guard records of refs, without repeats.
func guardIDs(refs document.Refs) []string {
	ids := make([]string, 0, len(refs.Tags)+len(refs.Media))
	for _, id := range refs.Tags {
		ids = append(ids, "tag:"+id)
	}
	for _, id := range refs.Media {
		ids = append(ids, "media:"+id)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// guardsRead are the counters of guard records as a save read them before
// its checks (absent: 0).
type guardsRead map[string]int64

// readGuards reads the guards of refs.
func (s *Store) readGuards(ctx context.Context, refs document.Refs) (guardsRead, error) {
	ids := guardIDs(refs)
	read := make(guardsRead, len(ids))
	if len(ids) == 0 {
		return read, nil
	}
	if err := s.guardValues(ctx, ids, read); err != nil {
		return nil, err
	}
	return read, nil
}

func (s *Store) guardValues(ctx context.Context, ids []string, into guardsRead) error {
	for _, id := range ids {
		into[id] = 0
	}
	cur, err := s.guards.Find(ctx, bson.M{"_id": bson.M{"$in": ids}})
	if err != nil {
		return err
	}
	var recs []struct {
		ID string `bson:"_id"`
		N  int64  `bson:"n"`
	}
	if err := cur.All(ctx, &recs); err != nil {
		return err
	}
	for _, r := range recs {
		into[r.ID] = r.N
	}
	return nil
}

// errRefsChanged: a deletion of a reference the write adds began after the
// write read its guards; the write runs again and checks anew.
var errRefsChanged = fmt.Errorf("%w: a reference was deleted since it was checked", errChanged)

// keepGuards checks, in the transaction of ctx, that the guards of the
// references the changes add are as read, and writes them (seq: the
// write's number) so that an overlapping deletion conflicts with the
// write. A reference added without its guard read is a bug of the caller
// (it did not declare it).
func (s *Store) keepGuards(ctx context.Context, read guardsRead, changes []change, seq int64) error {
	ids := guardIDs(added(changes))
	if len(ids) == 0 {
		return nil
	}
	now := make(guardsRead, len(ids))
	if err := s.guardValues(ctx, ids, now); err != nil {
		return err
	}
	models := make([]mongo.WriteModel, len(ids))
	for i, id := range ids {
		n, ok := read[id]
		if !ok {
			return errors.New("internal: a write added reference " + id + " it did not declare")
		}
		if now[id] != n {
			return errRefsChanged
		}
		models[i] = mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": id}).
			SetUpdate(bson.M{"$set": bson.M{"savedSeq": seq}}).SetUpsert(true)
	}
	_, err := s.guards.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	return err
}

// added are the references the changes give their documents that a
// deletion may not see yet: every tag a document did not name, and every
// media it did not use while live (a deleted document uses none: a media
// deletion asks only about live ones).
func added(changes []change) document.Refs {
	var out document.Refs
	for _, c := range changes {
		before, after := c.before.Refs(), c.after.Refs()
		for _, id := range after.Tags {
			if !slices.Contains(before.Tags, id) {
				out.Tags = append(out.Tags, id)
			}
		}
		if c.after.IsDeleted {
			continue
		}
		for _, id := range after.Media {
			if c.before.IsDeleted || !slices.Contains(before.Media, id) {
				out.Media = append(out.Media, id)
			}
		}
	}
	return out
}

// raiseGuards raises the guards of refs in a transaction of its own, before
// a deletion looks for the documents naming them: a save that checked one
// of them before then runs again.
func (s *Store) raiseGuards(ctx context.Context, refs document.Refs) error {
	ids := guardIDs(refs)
	if len(ids) == 0 {
		return nil
	}
	return mongox.InTx(ctx, s.client, func(ctx context.Context) error {
		models := make([]mongo.WriteModel, len(ids))
		for i, id := range ids {
			models[i] = mongo.NewUpdateOneModel().SetFilter(bson.M{"_id": id}).
				SetUpdate(bson.M{"$inc": bson.M{"n": int64(1)}}).SetUpsert(true)
		}
		_, err := s.guards.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
		return err
	})
}
