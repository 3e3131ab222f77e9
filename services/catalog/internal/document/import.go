package document

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/doclib/libs/validation"
)

// ErrImportConflict is an import of a document whose id exists with other
// content: an import never changes what is there (doclib's merge rule).
var ErrImportConflict = errors.New("a document with this id exists and differs from the imported one")

// WhyImport is the change of an imported document with no revision left
// to say what its last write was.
const WhyImport = "import"

// Import stores d as an export read it: id, dates, authors, version,
// status, pending changes, schedule, deleted or not (`doclib import`). Its
// tags and media must exist (they are imported first), as for any write;
// its pins are not checked, since the documents it pins may come later in
// the archive (doclib verify checked they are in it). created reports
// whether it was stored: the same document again changes nothing (false),
// another document under its id is ErrImportConflict. An import announces
// nothing (no event): a create never does, deleted or not. A publication
// whose time has passed is cleared, never applied at once; an
// unpublication whose time has passed is applied (it is stored a draft);
// either is returned (the same archive imported again compares the same).
func (s *Service) Import(ctx context.Context, d Document) (Document, bool, Overdue, error) {
	overdue := clearOverdue(&d, s.now())
	stored, created, err := s.importDocument(ctx, d)
	if err != nil {
		return Document{}, false, Overdue{}, err
	}
	return stored, created, overdue, nil
}

func (s *Service) importDocument(ctx context.Context, d Document) (Document, bool, error) {
	if err := checkImport(d); err != nil {
		return Document{}, false, err
	}
	if err := checkImportedContent(ctx, d); err != nil {
		return Document{}, false, err
	}
	if got, err := s.store.Get(ctx, d.ID); err == nil {
		return got, false, sameImport(got, d)
	} else if !errors.Is(err, ErrNotFound) {
		return Document{}, false, err
	}
	// Its revisions were imported first: none may be above its version,
	// which its next write takes.
	switch newest, err := s.store.NewestRevision(ctx, d.ID); {
	case err != nil:
		return Document{}, false, err
	case newest > d.Version:
		return Document{}, false, validation.Errors{{Field: "version",
			Message: fmt.Sprintf("is %d, below revision %d imported for this document: import the document at its latest version", d.Version, newest)}}
	}
	d.Change = Change{By: d.UpdatedBy, At: d.UpdatedAt, Why: WhyImport}
	r, err := s.store.GetRevision(ctx, d.ID, d.Version)
	switch {
	case err == nil:
		d.Change = r.Change // its last write, as its revision says
	case !errors.Is(err, ErrRevisionNotFound) && !errors.Is(err, ErrNotFound):
		return Document{}, false, err
	}
	// Without the revision of its version (imported without its history)
	// the document's current state becomes that revision, stored with it:
	// an export lists a history down from the document's version, and
	// would otherwise fail on this document for as long as it exists.
	stored, err := s.store.Create(ctx, d.ID, d.Refs(), func(nd *Document) error {
		checked, err := s.importRefs(ctx, d)
		if err != nil {
			return err
		}
		*nd = checked
		return nil
	})
	if err != nil {
		if got, gerr := s.store.Get(ctx, d.ID); gerr == nil { // imported meanwhile
			return got, false, sameImport(got, d)
		}
		return Document{}, false, err
	}
	return stored, true, nil
}

// ImportRevision stores a revision as given; the same one again is a
// no-op. Revisions are imported before their document.
func (s *Service) ImportRevision(ctx context.Context, r Revision) error {
	var errs validation.Errors
	if r.Version < 1 {
		errs.Add("version", "must be 1 or more")
	}
	if r.Doc.ID != r.DocumentID || !r.Doc.Type.Valid() || r.Doc.Version != r.Version {
		errs.Add("document", "must be a document of this id and version with a type")
	}
	if !importableID.MatchString(r.DocumentID) {
		errs.Add("id", "must be 1 to 64 letters, digits, '-' or '_'")
	}
	checkVersion(r.Version, &errs)
	checkAuthor("by", r.Change.By, &errs)
	if err := errs.Err(); err != nil {
		return err
	}
	if err := checkContent(ctx, r.Doc); err != nil {
		return err
	}
	// Revisions go only to a document this import creates: into one that
	// exists, they would become its history (the next write's own revision
	// of that version would then be dropped as a duplicate).
	if _, err := s.store.Get(ctx, r.DocumentID); err == nil {
		if got, err := s.store.GetRevision(ctx, r.DocumentID, r.Version); err == nil && reflect.DeepEqual(normImport(got.Doc), normImport(r.Doc)) {
			return nil
		}
		return ErrImportConflict
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	return s.store.PutRevisions(ctx, []Revision{r})
}

// importableID is the shape of a document id an import may name (NewID
// makes 22 of these characters): an export must be able to name it as an
// archive entry, and a URL path segment must carry it as it is.
var importableID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkImportedContent holds an imported document and its pending changes
// to the rules of a create: an import sets ids, dates and authors, never
// content an editor could not have written (unsanitised HTML, a
// javascript: link, too long a title).
func checkImportedContent(ctx context.Context, d Document) error {
	if err := checkContent(ctx, d); err != nil {
		return err
	}
	if d.Draft != nil {
		return checkContent(ctx, *d.Draft)
	}
	return nil
}

// checkContent validates d's content as a create would, and refuses it
// when the catalog would have stored it otherwise (sanitised, trimmed).
func checkContent(ctx context.Context, d Document) error {
	in := Input{Type: string(d.Type), Title: d.Title, TagsIDs: d.TagsIDs, URL: d.URL, Content: d.Content,
		Sources: d.Sources, ImagesIDs: d.ImagesIDs, RelatedIDs: d.RelatedIDs}
	if d.File != nil {
		in.FileID = d.File.ID
	}
	v, errs := validate(ctx, in)
	if err := errs.Err(); err != nil {
		return err
	}
	if v.Title != d.Title || v.URL != d.URL || v.Content != d.Content {
		return validation.Errors{{Field: "content", Message: "is not as the catalog stores it (it would be sanitised or trimmed): an import holds content a create makes"}}
	}
	return nil
}

func checkImport(d Document) error {
	var errs validation.Errors
	if !importableID.MatchString(d.ID) {
		errs.Add("id", "must be 1 to 64 letters, digits, '-' or '_'")
	}
	if !d.Type.Valid() {
		errs.Add("type", "must be one of PDF, LINK, MARKDOWN, HTML")
	}
	if d.Title == "" {
		errs.Add("title", "is required")
	}
	if d.CreatedAt.IsZero() || d.UpdatedAt.Before(d.CreatedAt) {
		errs.Add("updatedAt", "createdAt and updatedAt are required, in order")
	}
	if d.Version < 1 {
		errs.Add("version", "must be 1 or more")
	}
	if d.Status != Published && d.Status != Draft {
		errs.Add("status", "must be published or draft")
	}
	checkVersion(d.Version, &errs)
	checkAuthor("createdBy", d.CreatedBy, &errs)
	checkAuthor("updatedBy", d.UpdatedBy, &errs)
	checkAuthor("deletedBy", d.DeletedBy, &errs)
	checkImportedPins("relatedIds", d.RelatedIDs, d.ID, &errs)
	if d.Draft != nil {
		checkImportedPins("draft.relatedIds", d.Draft.RelatedIDs, d.ID, &errs)
	}
	return errs.Err()
}

// MaxVersion is the largest version an import takes: 2^53 - 1, the largest
// integer every JSON client reads exactly (RFC 7493 §2.2).
const MaxVersion = 1<<53 - 1

// MaxAuthor is the longest author name (CallerName in the API reference).
const MaxAuthor = 1024

func checkVersion(v int64, errs *validation.Errors) {
	if v > MaxVersion {
		errs.Add("version", "must be at most %d (got %d)", int64(MaxVersion), v)
	}
}

func checkAuthor(field, name string, errs *validation.Errors) {
	if n := utf8.RuneCountInString(name); n > MaxAuthor {
		errs.Add(field, "must be at most %d characters (got %d)", MaxAuthor, n)
	}
}

// checkImportedPins applies a write's rules on pins that need no store: at
// most MaxPins, none repeated, not the document itself, each an id (the
// documents pinned may come later in the archive).
func checkImportedPins(field string, ids []string, self string, errs *validation.Errors) {
	if len(ids) > MaxPins {
		errs.Add(field, "must hold at most %d documents (got %d)", MaxPins, len(ids))
		return
	}
	for i, id := range ids {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch j := slices.Index(ids, id); {
		case id == self:
			errs.Add(f, "is the document itself")
		case j < i:
			errs.Add(f, "repeats %s[%d]", field, j)
		case !importableID.MatchString(id):
			errs.Add(f, "unknown document '%s'", clip(id))
		}
	}
}

// importRefs checks that the tags and media d and its pending changes name
// exist, and records when each tag was created, as a write does.
func (s *Service) importRefs(ctx context.Context, d Document) (Document, error) {
	d = d.Clone()
	var errs validation.Errors
	if err := checkRefs(ctx, s.refs, &d, &errs); err != nil {
		return Document{}, err
	}
	if d.Draft != nil {
		if err := checkRefs(ctx, s.refs, d.Draft, &errs); err != nil {
			return Document{}, err
		}
	}
	if err := errs.Err(); err != nil {
		return Document{}, err
	}
	d.Seq, d.DeletedSeq = 0, 0
	return d, nil
}

// sameImport is nil when stored is the imported document (what the store
// adds aside), ErrImportConflict otherwise.
func sameImport(stored, imported Document) error {
	if reflect.DeepEqual(normImport(stored), normImport(imported)) {
		return nil
	}
	return ErrImportConflict
}

// normImport drops what the store adds and what a round trip through it
// may change (nil or empty lists, a date's location).
func normImport(d Document) Document {
	d = d.Clone()
	d.Seq, d.DeletedSeq, d.TagSince, d.Change = 0, 0, nil, Change{}
	for _, s := range []*[]string{&d.TagsIDs, &d.Sources, &d.ImagesIDs, &d.RelatedIDs} {
		if len(*s) == 0 {
			*s = nil
		}
	}
	for _, t := range []*time.Time{&d.CreatedAt, &d.UpdatedAt, &d.DeletedAt, &d.PurgedAt, &d.PublishedAt, &d.PublishAt, &d.UnpublishAt} {
		*t = t.UTC()
	}
	if d.Draft != nil {
		p := normImport(*d.Draft)
		d.Draft = &p
	}
	return d
}
