package export

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/doclib/cmd/doclib/internal/archive"
	"github.com/doclib/cmd/doclib/internal/client"
	"github.com/doclib/cmd/doclib/internal/library"
)

// errGone is a document that no longer exists (purged since it was listed).
var errGone = errors.New("gone")

// errNewestMissing is a history listed without the document's version: its
// revision is stored just after the document (normally at once; a
// momentary failure leaves it to the next listing or the settling job).
var errNewestMissing = errors.New("the newest revision is not stored")

// newestRetryWait is how long the exporter waits before it lists a
// history without its newest revision again (the catalog's settling job
// runs every few seconds).
const newestRetryWait = 3 * time.Second

// document writes the document id, after everything it names, unless it
// was written already; errGone when it no longer exists. pre is the
// document read ahead, or nil; a read ahead that failed is done again
// here, where a document gone is handled.
func (e *Exporter) document(ctx context.Context, id string, pre *fetched) error {
	if e.docs[id] {
		return nil
	}
	e.docs[id] = true
	deadline := time.Now().Add(e.Retry)
	for {
		f := e.read(ctx, id, pre)
		pre = nil // a document read again is read now
		if errors.Is(f.err, client.ErrNotFound) {
			delete(e.docs, id)
			return errGone
		}
		if f.err != nil {
			return f.err
		}
		missing, err := e.resolve(ctx, f.refs)
		if err != nil {
			return err
		}
		if missing == "" {
			return e.writeDocument(ctx, id, f.detail, f.version, f.revs)
		}
		if time.Now().After(deadline) {
			return e.repair(ctx, id, f.detail, f.version)
		}
		e.log.Info("a reference of a document disappeared; reading it again", "document", id, "missing", missing)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// read is pre when it was read ahead without error, else the document
// read now (its revisions are read when it is written).
func (e *Exporter) read(ctx context.Context, id string, pre *fetched) fetched {
	if pre != nil && pre.err == nil {
		return *pre
	}
	detail, version, refs, err := e.readDocument(ctx, id)
	return fetched{detail: detail, version: version, refs: refs, err: err}
}

func (e *Exporter) readDocument(ctx context.Context, id string) (json.RawMessage, int64, library.Refs, error) {
	detail, err := e.c.Get(ctx, "/bo/documents/"+id+"/detail")
	if err != nil {
		return nil, 0, library.Refs{}, fmt.Errorf("document %s: %w", id, err)
	}
	refs, err := library.DocumentRefs(detail)
	if err != nil {
		return nil, 0, library.Refs{}, fmt.Errorf("document %s: %w", id, err)
	}
	var v struct {
		Version int64 `json:"version"`
	}
	_ = json.Unmarshal(detail, &v)
	return detail, v.Version, refs, nil
}

// resolve makes sure everything refs names is in the archive (or will be,
// for reference data): it returns the first reference that is gone.
func (e *Exporter) resolve(ctx context.Context, refs library.Refs) (string, error) {
	for _, t := range refs.Tags {
		if _, ok := e.tags[t]; ok {
			continue
		}
		if err := e.readTaxonomy(ctx); err != nil {
			return "", err
		}
		if _, ok := e.tags[t]; !ok {
			return "tag " + t, nil
		}
	}
	for _, m := range refs.Media {
		if _, ok := e.media[m]; ok {
			continue
		}
		rec, err := e.c.Get(ctx, "/bo/medias/"+m)
		if errors.Is(err, client.ErrNotFound) {
			return "media " + m, nil
		}
		if err != nil {
			return "", fmt.Errorf("media %s: %w", m, err)
		}
		if ok, err := e.writeMedia(ctx, rec); err != nil || !ok {
			return "media " + m, err
		}
	}
	for _, d := range refs.Documents {
		if err := e.document(ctx, d, nil); errors.Is(err, errGone) {
			return "document " + d, nil
		} else if err != nil {
			return "", err
		}
	}
	return "", nil
}

// writeDocument writes the entry with revs, the revisions up to version
// (a write since the detail was read may have added some), read now when
// nil (not read ahead).
func (e *Exporter) writeDocument(ctx context.Context, id string, detail json.RawMessage, version int64, revs []json.RawMessage) error {
	var err error
	if revs == nil {
		revs, err = e.revisions(ctx, id, version)
	}
	if errors.Is(err, client.ErrNotFound) {
		delete(e.docs, id)
		return errGone
	}
	if err != nil {
		return fmt.Errorf("document %s: %w", id, err)
	}
	raw, err := marshal(library.Document{Document: detail, Revisions: revs})
	if err != nil {
		return err
	}
	e.revisionCount += len(revs)
	return e.w.WriteBytes(archive.DocumentEntry(id), raw)
}

// revisionsPerPage is the page asked for: the most the catalog gives of
// whole revisions (most documents in one request).
const revisionsPerPage = 20

// revisions returns the revisions of id up to version, oldest first, each
// as GET /bo/documents/{id}/revisions/{rev} answers it: read in pages of
// them whole (?full=true), one request for most documents, not one per
// revision. The first page starts at version (a write since the detail was
// read is not asked for). The newest must be the document's version and
// the versions must run strictly down; gaps below it are kept as they are
// (age retention removes by time, not only the oldest): any other listing
// is an error naming the document, never an archive silently short of its
// newest revision. Their bytes are counted as they come: a history past
// what an entry may hold fails naming the document, before the rest of it
// is read.
func (e *Exporter) revisions(ctx context.Context, id string, version int64) ([]json.RawMessage, error) {
	revs, err := e.listRevisions(ctx, id, version)
	if !errors.Is(err, errNewestMissing) {
		return revs, err
	}
	// Once more after a short wait: a momentary failure to store the
	// newest revision must not fail the whole export.
	select {
	case <-time.After(cmp.Or(e.retryWait, newestRetryWait)):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.listRevisions(ctx, id, version)
}

// listRevisions is one reading of revisions.
func (e *Exporter) listRevisions(ctx context.Context, id string, version int64) ([]json.RawMessage, error) {
	var out []json.RawMessage
	size := 0
	prev := version + 1 // the version of the revision listed before
	for before := version + 1; before > 1; {
		page, err := e.revisionPage(ctx, id, before)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Revisions {
			v := revisionVersion(r)
			if err := nextRevision(v, prev, version); err != nil {
				return nil, fmt.Errorf("revisions: %w; the entry documents/%s.json would lose revisions", err, id)
			}
			prev = v
			out = append(out, r)
			if size += len(r); size > e.maxEntry() {
				return nil, fmt.Errorf("revisions: over %d bytes down to revision %d, more than the entry documents/%s.json may hold", e.maxEntry(), v, id)
			}
		}
		before = page.NextBefore
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("revisions: %w: the catalog listed none, revision %d due; the entry documents/%s.json would lose revisions", errNewestMissing, version, id)
	}
	slices.Reverse(out) // pages come newest first
	return out, nil
}

// nextRevision checks v, listed after prev (newest first) in the history
// of a document at version: the first must be version, each next one
// below the one before.
func nextRevision(v, prev, version int64) error {
	switch {
	case prev > version && v != version:
		return fmt.Errorf("%w: the catalog listed revision %d first where %d, the document's version, was due", errNewestMissing, v, version)
	case v >= prev || v < 1:
		return fmt.Errorf("the catalog listed revision %d after %d (versions must run down without a repeat)", v, prev)
	}
	return nil
}

// maxEntry is the most a document entry may hold (archive.MaxJSONEntry;
// tests lower it).
func (e *Exporter) maxEntry() int {
	if e.entryLimit > 0 {
		return e.entryLimit
	}
	return archive.MaxJSONEntry
}

type revisionPage struct {
	Revisions  []json.RawMessage `json:"revisions"`
	NextBefore int64             `json:"nextBefore"`
}

// revisionPage reads the page of id's revisions below before.
func (e *Exporter) revisionPage(ctx context.Context, id string, before int64) (revisionPage, error) {
	var page revisionPage
	raw, err := e.c.Get(ctx, fmt.Sprintf("/bo/documents/%s/revisions?full=true&limit=%d&before=%d", id, revisionsPerPage, before))
	if err != nil {
		return page, err
	}
	err = json.Unmarshal(raw, &page)
	return page, err
}

// revisionVersion is a revision's version, 0 if it has none.
func revisionVersion(raw json.RawMessage) int64 {
	var v struct {
		Version int64 `json:"version"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.Version
}

// writeReferenceData writes categories, tags, settings and media records.
func (e *Exporter) writeReferenceData(settings []byte) error {
	lines := func(ids []string, recs map[string]json.RawMessage) []byte {
		var out bytes.Buffer
		for _, id := range ids {
			_ = json.Compact(&out, recs[id]) // valid JSON: it was decoded
			out.WriteByte('\n')
		}
		return out.Bytes()
	}
	for _, entry := range []struct {
		path string
		raw  []byte
	}{
		{archive.CategoriesPath, lines(e.catIDs, e.categories)},
		{archive.TagsPath, lines(e.tagIDs, e.tags)},
		{archive.SettingsPath, settings},
		{archive.MediaPath, lines(e.mediaIDs, e.media)},
	} {
		if err := e.w.WriteBytes(entry.path, entry.raw); err != nil {
			return err
		}
	}
	return nil
}

// repair writes a document whose references are still gone after Retry
// (the catalog has not applied their deletions yet, e.g. under load)
// without them, as the catalog will have it once it has: a tag, media or
// pinned document deleted is dropped from it (a PDF's file too). The
// manifest counts such documents (repaired).
func (e *Exporter) repair(ctx context.Context, id string, detail json.RawMessage, version int64) error {
	var doc map[string]any
	if err := json.Unmarshal(detail, &doc); err != nil {
		return fmt.Errorf("document %s: %w", id, err)
	}
	var dropped []string
	for _, d := range []map[string]any{doc, asObject(doc["draft"])} {
		if d == nil {
			continue
		}
		dropped = append(dropped, e.dropMissing(d)...)
	}
	fixed, err := marshal(doc)
	if err != nil {
		return err
	}
	e.log.Warn("a document named records deleted meanwhile; the archive holds it without them, as the catalog will",
		"document", id, "dropped", dropped)
	e.repaired++
	return e.writeDocument(ctx, id, fixed, version, nil)
}

func asObject(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// dropMissing removes from one document's fields the ids the archive will
// not hold.
func (e *Exporter) dropMissing(d map[string]any) []string {
	var dropped []string
	keep := func(field string, has func(string) bool) {
		list, _ := d[field].([]any)
		out := []any{}
		for _, v := range list {
			if s, _ := v.(string); has(s) {
				out = append(out, v)
			} else {
				dropped = append(dropped, field+":"+s)
			}
		}
		if _, ok := d[field]; ok {
			d[field] = out
		}
	}
	hasTag := func(s string) bool { _, ok := e.tags[s]; return ok }
	hasMedia := func(s string) bool { _, ok := e.media[s]; return ok }
	keep("tagsIds", hasTag)
	keep("imagesIds", hasMedia)
	keep("relatedIds", func(s string) bool { return e.docs[s] })
	if f := asObject(d["file"]); f != nil {
		if s, _ := f["id"].(string); !hasMedia(s) {
			delete(d, "file")
			dropped = append(dropped, "file:"+s)
		}
	}
	return dropped
}

// marshal is json.Marshal without HTML escaping: encoding/json would write
// every <, > and & of a document's HTML content as a 6-byte \u escape,
// making the entry (and the body of its import) up to 6 times the content.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
