package mongostore

// The editorial fields of a document (version, last change, status,
// pending changes, schedule) and the revisions collection: one record per
// (document, version), _id "<documentId>/<version>", holding the document
// as it was after that write, inserted in the write's transaction.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/services/catalog/internal/document"
)

type changeDoc struct {
	By  string    `bson:"by,omitempty"`
	At  time.Time `bson:"at"`
	Why string    `bson:"why"`
}

// draftDoc is a document's pending changes: its content fields only.
type draftDoc struct {
	Title     string        `bson:"title"`
	URL       string        `bson:"url,omitempty"`
	TagsIDs   []string      `bson:"tagsIds"`
	TagSince  []tagSinceDoc `bson:"tagSince,omitempty"`
	Related   []string      `bson:"relatedIds,omitempty"`
	Content   string        `bson:"content,omitempty"`
	Sources   []string      `bson:"sources,omitempty"`
	ImagesIDs []string      `bson:"imagesIds,omitempty"`
	File      *fileDoc      `bson:"file,omitempty"`
}

type editorialDoc struct {
	Version int64      `bson:"version,omitempty"`
	Change  *changeDoc `bson:"change,omitempty"`
	// RevPending was set by the version before transactions on a document
	// whose revision was not stored yet (settleLegacy stores it).
	RevPending  bool       `bson:"revPending,omitempty"`
	Status      string     `bson:"status,omitempty"`
	Draft       *draftDoc  `bson:"draft,omitempty"`
	PublishedAt *time.Time `bson:"publishedAt,omitempty"`
	PublishAt   *time.Time `bson:"publishAt,omitempty"`
	UnpublishAt *time.Time `bson:"unpublishAt,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func timeOf(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func toEditorial(d document.Document) editorialDoc {
	e := editorialDoc{Version: d.Version, Status: string(d.Status),
		PublishedAt: timePtr(d.PublishedAt), PublishAt: timePtr(d.PublishAt), UnpublishAt: timePtr(d.UnpublishAt)}
	if !d.Change.At.IsZero() {
		e.Change = &changeDoc{By: d.Change.By, At: d.Change.At, Why: d.Change.Why}
	}
	if d.Draft != nil {
		c := toDoc(*d.Draft)
		e.Draft = &draftDoc{Title: c.Title, URL: c.URL, TagsIDs: c.TagsIDs, TagSince: c.TagSince, Related: c.Related,
			Content: c.Content, Sources: c.Sources, ImagesIDs: c.ImagesIDs, File: c.File}
	}
	return e
}

func (e editorialDoc) into(d *document.Document) {
	d.Version, d.Status = e.Version, document.Status(e.Status)
	d.PublishedAt, d.PublishAt, d.UnpublishAt = timeOf(e.PublishedAt), timeOf(e.PublishAt), timeOf(e.UnpublishAt)
	if e.Change != nil {
		d.Change = document.Change{By: e.Change.By, At: e.Change.At.UTC(), Why: e.Change.Why}
	}
	if e.Draft != nil {
		p := doc{Title: e.Draft.Title, Type: string(d.Type), URL: e.Draft.URL, TagsIDs: e.Draft.TagsIDs,
			TagSince: e.Draft.TagSince, Related: e.Draft.Related, Content: e.Draft.Content, Sources: e.Draft.Sources,
			ImagesIDs: e.Draft.ImagesIDs, File: e.Draft.File}.domain()
		d.Draft = &p
	}
}

type revisionDoc struct {
	ID         string    `bson:"_id"`
	DocumentID string    `bson:"documentId"`
	Version    int64     `bson:"version"`
	Change     changeDoc `bson:"change"`
	Doc        *doc      `bson:"doc,omitempty"`
}

func revisionID(id string, version int64) string { return fmt.Sprintf("%s/%d", id, version) }

// PutRevisions implements document.Revisions: the revisions are inserted
// with one unordered InsertMany, each under its key; one already there is
// left as it is (the same write's revision, stored by another path).
func (s *Store) PutRevisions(ctx context.Context, revs []document.Revision) error {
	if len(revs) == 0 {
		return nil
	}
	docs := make([]any, len(revs))
	for i, r := range revs {
		d := toDoc(r.Doc)
		docs[i] = revisionDoc{ID: revisionID(r.DocumentID, r.Version), DocumentID: r.DocumentID, Version: r.Version,
			Change: changeDoc{By: r.Change.By, At: r.Change.At, Why: r.Change.Why}, Doc: &d}
	}
	_, err := s.revs.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false))
	if err != nil && !onlyDuplicates(err) {
		return fmt.Errorf("revisions of %s and %d more: %w", revs[0].DocumentID, len(revs)-1, err)
	}
	return nil
}

// onlyDuplicates reports whether every error of a bulk insert is a
// duplicate key (those revisions were stored already).
func onlyDuplicates(err error) bool {
	var bwe mongo.BulkWriteException
	if !errors.As(err, &bwe) || bwe.WriteConcernError != nil || len(bwe.WriteErrors) == 0 {
		return false
	}
	for _, we := range bwe.WriteErrors {
		if !mongo.IsDuplicateKeyError(we) {
			return false
		}
	}
	return true
}

// putRevisions stores, in the write's transaction, the revision of each
// change that took a new version, and removes the revisions beyond the
// keep newest of their documents. A create's revision may be there already
// (an import brings a document's history before it): it is left as it is.
func (s *Store) putRevisions(ctx context.Context, changes []change) error {
	var docs []any
	upTo := bson.A{}
	for _, c := range changes {
		if c.after.Version <= c.before.Version {
			continue
		}
		r := revisionDocOf(c.after)
		if c.before.Seq == 0 {
			switch err := s.revs.FindOne(ctx, bson.M{"_id": r.ID}).Err(); {
			case err == nil:
				continue
			case !errors.Is(err, mongo.ErrNoDocuments):
				return err
			}
		}
		docs = append(docs, r)
		if s.keep > 0 && r.Version > s.keep {
			upTo = append(upTo, bson.M{"documentId": r.DocumentID, "version": bson.M{"$lte": r.Version - s.keep}})
		}
	}
	if len(docs) == 0 {
		return nil
	}
	if _, err := s.revs.InsertMany(ctx, docs); err != nil {
		return fmt.Errorf("revisions of %d documents: %w", len(docs), err)
	}
	if len(upTo) == 0 {
		return nil
	}
	_, err := s.revs.DeleteMany(ctx, bson.M{"$or": upTo})
	return err
}

func revisionDocOf(d document.Document) revisionDoc {
	stored := toDoc(d)
	return revisionDoc{ID: revisionID(d.ID, d.Version), DocumentID: d.ID, Version: d.Version,
		Change: changeDoc{By: d.Change.By, At: d.Change.At, Why: d.Change.Why}, Doc: &stored}
}

// settleLegacy stores the revisions the version before transactions left
// to store (documents marked revPending), and clears their marks.
func (s *Store) settleLegacy(ctx context.Context) error {
	marked, err := s.find(ctx, bson.M{"revPending": true}, nil)
	if err != nil || len(marked) == 0 {
		return err
	}
	revs := make([]document.Revision, len(marked))
	ids := make([]string, len(marked))
	for i, d := range marked {
		revs[i] = document.Revision{DocumentID: d.ID, Version: d.Version, Change: d.Change, Doc: d}
		ids[i] = d.ID
	}
	if err := s.PutRevisions(ctx, revs); err != nil {
		return err
	}
	_, err = s.docs.UpdateMany(ctx, bson.M{"_id": bson.M{"$in": ids}}, bson.M{"$unset": bson.M{"revPending": ""}})
	return err
}

// ListRevisions implements document.Revisions: one query on the
// (documentId, version) index, newest first.
func (s *Store) ListRevisions(ctx context.Context, id string, before int64, limit int, withDocs bool) ([]document.Revision, error) {
	opts := options.Find().SetSort(bson.D{{Key: "version", Value: -1}}).SetLimit(int64(limit))
	if !withDocs {
		opts.SetProjection(bson.M{"doc": 0})
	}
	cur, err := s.revs.Find(ctx, bson.M{"documentId": id, "version": bson.M{"$lt": before, "$gte": before - int64(limit)}}, opts)
	if err != nil {
		return nil, err
	}
	var found []revisionDoc
	if err := cur.All(ctx, &found); err != nil {
		return nil, err
	}
	out := make([]document.Revision, len(found))
	for i, r := range found {
		out[i] = r.domain()
	}
	return out, nil
}

func (r revisionDoc) domain() document.Revision {
	out := document.Revision{DocumentID: r.DocumentID, Version: r.Version,
		Change: document.Change{By: r.Change.By, At: r.Change.At.UTC(), Why: r.Change.Why}}
	if r.Doc != nil {
		out.Doc = r.Doc.domain()
	}
	return out
}

// NewestRevision implements document.Revisions.
func (s *Store) NewestRevision(ctx context.Context, id string) (int64, error) {
	var r revisionDoc
	err := s.revs.FindOne(ctx, bson.M{"documentId": id}, options.FindOne().
		SetSort(bson.D{{Key: "version", Value: -1}}).SetProjection(bson.M{"version": 1})).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	return r.Version, err
}

// GetRevision implements document.Revisions.
func (s *Store) GetRevision(ctx context.Context, id string, version int64) (document.Revision, error) {
	var r revisionDoc
	err := s.revs.FindOne(ctx, bson.M{"_id": revisionID(id, version)}).Decode(&r)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return document.Revision{}, document.ErrRevisionNotFound
	}
	if err != nil {
		return document.Revision{}, err
	}
	return r.domain(), nil
}

// expireBatch is how many expired revisions ExpireRevisions looks at per
// step.
const expireBatch = 1000

// ExpireRevisions implements document.Revisions. A document's newest
// revision (its current version's) is kept however old: the history of a
// document not changed for longer than the retention keeps its last entry.
// Each step reads a batch of expired revisions, the versions of their
// documents, and removes those below the version (or of a document gone).
func (s *Store) ExpireRevisions(ctx context.Context, before time.Time) (int64, error) {
	var removed int64
	after := "" // pages by _id: one pass over the collection, whatever it keeps
	for {
		filter := bson.M{"change.at": bson.M{"$lt": before}, "_id": bson.M{"$gt": after}}
		cur, err := s.revs.Find(ctx, filter, options.Find().SetSort(bson.M{"_id": 1}).
			SetProjection(bson.M{"_id": 1, "documentId": 1, "version": 1}).SetLimit(expireBatch))
		if err != nil {
			return removed, err
		}
		var revs []revisionDoc
		if err := cur.All(ctx, &revs); err != nil || len(revs) == 0 {
			return removed, err
		}
		after = revs[len(revs)-1].ID
		expired, err := s.expired(ctx, revs)
		if err != nil {
			return removed, err
		}
		if len(expired) > 0 {
			res, err := s.revs.DeleteMany(ctx, bson.M{"_id": bson.M{"$in": expired}})
			if err != nil {
				return removed, err
			}
			removed += res.DeletedCount
		}
		if len(revs) < expireBatch {
			return removed, nil
		}
	}
}

// expired are those of revs that may go: below their document's version,
// or of a document gone. The newest of each document stays.
func (s *Store) expired(ctx context.Context, revs []revisionDoc) ([]string, error) {
	var ids []string
	for _, r := range revs {
		if !slices.Contains(ids, r.DocumentID) {
			ids = append(ids, r.DocumentID)
		}
	}
	cur, err := s.docs.Find(ctx, bson.M{"_id": bson.M{"$in": ids}}, options.Find().SetProjection(bson.M{"_id": 1, "version": 1}))
	if err != nil {
		return nil, err
	}
	var docs []doc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	version := make(map[string]int64, len(docs))
	for _, d := range docs {
		version[d.ID] = d.Editorial.Version
	}
	var expired []string
	for _, r := range revs {
		if v, ok := version[r.DocumentID]; !ok || r.Version < v {
			expired = append(expired, r.ID)
		}
	}
	return expired, nil
}

// Scheduled implements document.Store: the documents not deleted whose
// publication or unpublication is due (one in the trash keeps its schedule
// for a restore, which clears or applies it), by the index of each.
func (s *Store) Scheduled(ctx context.Context, now time.Time, limit int) ([]string, error) {
	due := bson.M{"$lte": now}
	cur, err := s.docs.Find(ctx, bson.M{"$or": bson.A{
		bson.M{"isDeleted": false, "publishAt": due}, bson.M{"isDeleted": false, "unpublishAt": due}}},
		options.Find().SetProjection(bson.M{"_id": 1}).SetLimit(int64(limit)))
	if err != nil {
		return nil, err
	}
	return decodeIDs(ctx, cur)
}
