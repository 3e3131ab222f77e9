package mongostore

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/idempotency"
	idemstore "github.com/doclib/libs/idempotency/mongostore"
	"github.com/doclib/services/taxonomy/internal/tag"
)

// keySweepEvery is how often Sweep takes expired keys off records.
const keySweepEvery = time.Minute

// keyHolder is the part of a category or tag that says what its
// Idempotency-Key made.
type keyHolder struct {
	OID       bson.ObjectID   `bson:"_id"`
	DeletedAt *time.Time      `bson:"deletedAt,omitempty"`
	DeletedID string          `bson:"deletedId,omitempty"`
	Stamp     idemstore.Stamp `bson:",inline"`
}

// insert stores doc (of kind, with the caller's id), stamped with key. No
// two records of coll hold one key (idemstore.KeyIndex), deleted ones
// included until the key expires: an insert under a held key is answered
// by what the key made (answer); a key found expired is taken off its
// holder and the insert tried again, as when the holder is gone by the
// time it is looked up (once). Another unique key taken is
// ErrDuplicateID or ErrDuplicateName.
func (s *Store) insert(ctx context.Context, coll *mongo.Collection, kind, id string, doc any, key *idempotency.Claim) error {
	gone := false
	for range 3 {
		_, err := coll.InsertOne(ctx, doc)
		if !mongo.IsDuplicateKeyError(err) {
			return err
		}
		if key == nil {
			return whichDuplicate(ctx, coll, id, err)
		}
		if s.collided != nil {
			s.collided()
		}
		var held keyHolder
		switch ferr := coll.FindOne(ctx, bson.M{idemstore.KeyField: key.ID}).Decode(&held); {
		case errors.Is(ferr, mongo.ErrNoDocuments) && !gone:
			// No holder now: the collision was on the id or the name, or
			// on a holder gone since (its expired key taken off, its
			// tombstone swept). Trying once again tells them apart:
			// answered "name taken", the latter would be kept as the
			// key's outcome.
			gone = true
			continue
		case errors.Is(ferr, mongo.ErrNoDocuments):
			return whichDuplicate(ctx, coll, id, err)
		case ferr != nil:
			return ferr
		}
		if !s.now().Before(held.Stamp.ExpiresAt) {
			// Expired: it no longer stands in the way.
			filter := idemstore.Expired(s.now())
			filter["_id"] = held.OID
			if _, err := coll.UpdateOne(ctx, filter, idemstore.Unstamp()); err != nil {
				return err
			}
			continue
		}
		return held.answer(kind, key)
	}
	return errKeyLetGo
}

// KeyOutcome implements tag.Store.
func (s *Store) KeyOutcome(ctx context.Context, kind string, key *idempotency.Claim) error {
	coll := s.tags
	if kind == tag.KindCategory {
		coll = s.categories
	}
	var held keyHolder
	switch err := coll.FindOne(ctx, bson.M{idemstore.KeyField: key.ID}).Decode(&held); {
	case errors.Is(err, mongo.ErrNoDocuments):
		return nil
	case err != nil:
		return err
	case !s.now().Before(held.Stamp.ExpiresAt):
		return nil // expired: it no longer says anything
	}
	return held.answer(kind, key)
}

// answer is the answer of a create under the key h holds, not expired: the
// record made by the same request (ErrMadeBefore), deleted since
// (KeyDeletedError), or made by another request (ErrKeyReused).
func (h keyHolder) answer(kind string, key *idempotency.Claim) error {
	switch {
	case h.Stamp.Fingerprint != key.Fingerprint:
		return tag.ErrKeyReused
	case h.DeletedAt != nil:
		return &tag.KeyDeletedError{Kind: kind, ID: h.DeletedID}
	}
	return tag.ErrMadeBefore
}

// prepareKeyIndex makes the records stored before the unique key index
// existed fit it, so that building it cannot fail: expired keys are taken
// off, and of several records holding one key (a key let go after an
// unknown outcome and used again, before this store looked for it) the
// live one, or the first created (by seq, then _id), keeps it. Stamped records are the few created
// within the key retention, so reading them at each start is cheap.
func (s *Store) prepareKeyIndex(ctx context.Context) error {
	for _, coll := range []*mongo.Collection{s.categories, s.tags} {
		if _, err := coll.UpdateMany(ctx, idemstore.Expired(s.now()), idemstore.Unstamp()); err != nil {
			return err
		}
		var held []keyHolder
		// In creation order (bySeq), so that replicas starting together
		// keep the same record.
		if err := find(ctx, coll, bson.M{idemstore.KeyField: bson.M{"$exists": true}}, bySeq, &held); err != nil {
			return err
		}
		keeper := make(map[string]keyHolder, len(held))
		var drop []bson.ObjectID
		for _, h := range held {
			k, seen := keeper[h.Stamp.Key]
			switch {
			case !seen:
				keeper[h.Stamp.Key] = h
			case k.DeletedAt != nil && h.DeletedAt == nil:
				keeper[h.Stamp.Key] = h
				drop = append(drop, k.OID)
			default:
				drop = append(drop, h.OID)
			}
		}
		if len(drop) > 0 {
			if _, err := coll.UpdateMany(ctx, bson.M{"_id": bson.M{"$in": drop}}, idemstore.Unstamp()); err != nil {
				return err
			}
		}
	}
	return nil
}
