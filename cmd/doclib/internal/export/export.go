// Package export writes a whole installation into one archive, streamed,
// through the back-office API, while editors may be writing.
//
// Consistency without a snapshot: media files are written first (as they
// are listed), then each document, checked before it is written: a tag it
// names that the taxonomy read did not have makes the exporter read the
// taxonomy again (the tag is new); a media it names that is not written yet
// is fetched and written then; a pinned document is written before it. A
// reference that is still missing (its tag or media was deleted meanwhile)
// makes the exporter read the document again: the catalog removes such
// references when the deletion's event reaches it, within seconds; after
// Retry (a catalog slow to apply it), the document is written without them,
// as the catalog will have it, and counted as repaired. The
// reference data (categories, tags, media records, settings) is written
// last, as the union of every read: a tag deleted during the export may be
// in the archive, never a document naming a tag that is not. Only ids and
// the small reference data are held in memory; each document one at a time.
package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/doclib/cmd/doclib/internal/archive"
	"github.com/doclib/cmd/doclib/internal/client"
	"github.com/doclib/cmd/doclib/internal/library"
)

// Exporter writes one archive.
type Exporter struct {
	c   *client.Client
	w   *archive.Writer
	log *slog.Logger

	categories    map[string]json.RawMessage // without their tags
	tags          map[string]json.RawMessage
	tagIDs        []string // creation order, as taxonomy lists them
	catIDs        []string
	media         map[string]json.RawMessage // the records of the files written
	mediaIDs      []string
	docs          map[string]bool // written, or being written (pins may cycle)
	revisionCount int
	repaired      int
	mediaBytes    int
	workers       int           // documents read ahead at a time
	entryLimit    int           // 0: archive.MaxJSONEntry (see maxEntry)
	retryWait     time.Duration // 0: newestRetryWait (tests lower it)
	// Retry bounds how long a document whose reference disappeared is read
	// again before the export fails.
	Retry time.Duration
}

// Run writes the archive of the installation c reaches to out, reading up
// to workers documents ahead.
func Run(ctx context.Context, c *client.Client, out io.Writer, compress bool, source string, workers int, log *slog.Logger) error {
	w, err := archive.NewWriter(out, compress, source, time.Now)
	if err != nil {
		return err
	}
	e := &Exporter{c: c, w: w, log: log, categories: map[string]json.RawMessage{}, tags: map[string]json.RawMessage{},
		media: map[string]json.RawMessage{}, docs: map[string]bool{}, Retry: 10 * time.Second, workers: workers}
	if err := e.run(ctx); err != nil {
		return err
	}
	return w.Close(e.counts())
}

func (e *Exporter) run(ctx context.Context) error {
	if err := e.readMedia(ctx); err != nil {
		return err
	}
	if err := e.readTaxonomy(ctx); err != nil {
		return err
	}
	ids, err := e.documentIDs(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the reads ahead when the export fails
	pre := e.startPrefetch(ctx, ids, e.workers)
	for i, id := range ids {
		f, err := pre.take(ctx, i)
		if err != nil {
			return err
		}
		if err := e.document(ctx, id, &f); err != nil && !errors.Is(err, errGone) {
			return err
		}
	}
	settings, err := e.c.Get(ctx, "/bo/config")
	if err != nil {
		return fmt.Errorf("read the settings: %w", err)
	}
	return e.writeReferenceData(settings)
}

func (e *Exporter) counts() map[string]int {
	return map[string]int{library.CountCategories: len(e.categories), library.CountTags: len(e.tags),
		library.CountDocuments: len(e.docs), library.CountRevisions: e.revisionCount, library.CountMedia: len(e.media),
		library.CountMediaBytes: e.mediaBytes, "repaired": e.repaired}
}

// readMedia writes every listed media's file.
func (e *Exporter) readMedia(ctx context.Context) error {
	raw, err := e.c.Get(ctx, "/bo/medias")
	if err != nil {
		return fmt.Errorf("list the media: %w", err)
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return fmt.Errorf("list the media: %w", err)
	}
	slices.Reverse(list) // oldest first
	for _, rec := range list {
		if _, err := e.writeMedia(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

// writeMedia writes a media's file and keeps its record; false when the
// media is gone (deleted since it was listed).
func (e *Exporter) writeMedia(ctx context.Context, rec json.RawMessage) (bool, error) {
	var m library.Media
	if err := json.Unmarshal(rec, &m); err != nil || m.ID == "" {
		return false, fmt.Errorf("a media record without an id: %s", rec)
	}
	if _, ok := e.media[m.ID]; ok {
		return true, nil
	}
	body, size, err := e.c.Download(ctx, "/bo/medias/"+m.ID+"/download")
	if errors.Is(err, client.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("media %s: %w", m.ID, err)
	}
	defer body.Close()
	if size != m.Size {
		return false, fmt.Errorf("media %s: the download has %d bytes, its record %d", m.ID, size, m.Size)
	}
	if err := e.w.WriteStream(archive.MediaEntry(m.ID), m.Size, m.SHA256, body); err != nil {
		return false, err
	}
	e.media[m.ID] = rec
	e.mediaIDs = append(e.mediaIDs, m.ID)
	e.mediaBytes += int(m.Size)
	return true, nil
}

// readTaxonomy merges the current categories and tags into what was read.
func (e *Exporter) readTaxonomy(ctx context.Context) error {
	raw, err := e.c.Get(ctx, "/bo/tags-categories")
	if err != nil {
		return fmt.Errorf("read the tag categories: %w", err)
	}
	var cats []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cats); err != nil {
		return fmt.Errorf("read the tag categories: %w", err)
	}
	for _, c := range cats {
		var id string
		var tags []json.RawMessage
		if json.Unmarshal(c["id"], &id) != nil || json.Unmarshal(c["tags"], &tags) != nil {
			return fmt.Errorf("a tag category without id or tags: %v", c)
		}
		delete(c, "tags")
		rec, _ := marshal(c)
		if _, ok := e.categories[id]; !ok {
			e.catIDs = append(e.catIDs, id)
		}
		e.categories[id] = rec
		for _, t := range tags {
			var tag library.Tag
			if err := json.Unmarshal(t, &tag); err != nil || tag.ID == "" {
				return fmt.Errorf("a tag without an id in category %s", id)
			}
			if _, ok := e.tags[tag.ID]; !ok {
				e.tagIDs = append(e.tagIDs, tag.ID)
			}
			e.tags[tag.ID] = t
		}
	}
	return nil
}

func (e *Exporter) documentIDs(ctx context.Context) ([]string, error) {
	raw, err := e.c.Get(ctx, "/bo/documents")
	if err != nil {
		return nil, fmt.Errorf("list the documents: %w", err)
	}
	var list []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("list the documents: %w", err)
	}
	ids := make([]string, 0, len(list))
	for i := len(list) - 1; i >= 0; i-- { // oldest first
		ids = append(ids, list[i].ID)
	}
	return ids, nil
}
