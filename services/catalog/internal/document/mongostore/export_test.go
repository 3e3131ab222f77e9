package mongostore

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/services/catalog/internal/document"
)

// SetClock makes the store read the time from now (tests of stale holds).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// InsertRevisions stores revisions in batches (InsertMany), in the shape
// PutRevisions gives them: the storage benchmark fills 100,000 quickly.
func (s *Store) InsertRevisions(ctx context.Context, revs []document.Revision) error {
	docs := make([]any, len(revs))
	for i, r := range revs {
		d := toDoc(r.Doc)
		docs[i] = revisionDoc{ID: revisionID(r.DocumentID, r.Version), DocumentID: r.DocumentID, Version: r.Version,
			Change: changeDoc{By: r.Change.By, At: r.Change.At, Why: r.Change.Why}, Doc: &d}
	}
	_, err := s.revs.InsertMany(ctx, docs)
	return err
}

// RevisionStorage returns the revisions collection's data and index sizes
// as the database reports them (collStats).
func (s *Store) RevisionStorage(ctx context.Context) (size, storage, indexes int64, err error) {
	var st struct {
		Size        int64 `bson:"size"`
		StorageSize int64 `bson:"storageSize"`
		IndexSize   int64 `bson:"totalIndexSize"`
	}
	err = s.revs.Database().RunCommand(ctx, bson.D{{Key: "collStats", Value: "revisions"}}).Decode(&st)
	return st.Size, st.StorageSize, st.IndexSize, err
}
