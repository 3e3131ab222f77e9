package mongostore

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/services/media/internal/media"
)

// UploadsCollection holds one document per object an upload is writing:
// {_id: object key, startedAt, failed}.
const UploadsCollection = "uploads"

type uploadDoc struct {
	Key       string    `bson:"_id"`
	StartedAt time.Time `bson:"startedAt"`
	Failed    bool      `bson:"failed,omitempty"`
}

// Uploads implements media.Store.
func (s *Store) Uploads() media.UploadStore { return uploads{s} }

type uploads struct{ s *Store }

// Begin implements media.UploadStore.
func (u uploads) Begin(ctx context.Context, key string, at time.Time) error {
	_, err := u.s.uploads.InsertOne(ctx, uploadDoc{Key: key, StartedAt: at})
	return err
}

// Fail implements media.UploadStore.
func (u uploads) Fail(ctx context.Context, key string) error {
	_, err := u.s.uploads.UpdateOne(ctx, bson.M{"_id": key}, bson.M{"$set": bson.M{"failed": true}})
	return err
}

// End implements media.UploadStore.
func (u uploads) End(ctx context.Context, key string) error {
	_, err := u.s.uploads.DeleteOne(ctx, bson.M{"_id": key})
	return err
}

// Stale implements media.UploadStore.
func (u uploads) Stale(ctx context.Context, cutoff time.Time) ([]string, error) {
	cur, err := u.s.uploads.Find(ctx, bson.M{"$or": bson.A{bson.M{"failed": true}, bson.M{"startedAt": bson.M{"$lt": cutoff}}}})
	if err != nil {
		return nil, err
	}
	var docs []uploadDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	keys := make([]string, len(docs))
	for i, d := range docs {
		keys[i] = d.Key
	}
	return keys, nil
}

// Referenced implements media.UploadStore.
func (u uploads) Referenced(ctx context.Context, key string) (bool, error) {
	err := u.s.coll.FindOne(ctx, bson.M{"objectKey": key}).Err()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	return err == nil, err
}
