// Package consumers applies the other contexts' deletion events to the
// catalog: a deleted tag (alone or with its category) leaves every
// document's tagsIds (but see removeTags for an id created anew), and a
// deleted media leaves the documents that still name it (deleted ones, or
// a live one written while the media was being deleted: that is logged as
// a warning). Every handler is idempotent, so a redelivered event changes
// nothing more.
package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/services/catalog/internal/document"
)

// Store is what the handlers change.
type Store interface {
	RemoveTags(ctx context.Context, tagIDs []string) (int64, error)
	// RemoveTagCheckedBefore takes the tag out of the documents whose
	// references were last checked before the given time.
	RemoveTagCheckedBefore(ctx context.Context, tagID string, before time.Time) (int64, error)
	DropMedia(ctx context.Context, mediaID string) (dropped int64, live []string, err error)
}

// Taxonomy tells which tags exist now, and since when.
type Taxonomy interface {
	Tags(ctx context.Context, ids []string) (map[string]time.Time, error)
}

// Start runs the catalog's three durable consumers until Stop.
func Start(ctx context.Context, js jetstream.JetStream, store Store, taxonomy Taxonomy, log *slog.Logger) (stop func(context.Context) error, err error) {
	h := handlers{store: store, taxonomy: taxonomy, log: log}
	specs := []struct {
		cfg events.ConsumerConfig
		fn  events.Handler
	}{
		// A burst of tag deletions (a category with many tags, a clean-up in
		// the back-office) is applied in batches: one write for many events.
		{events.ConsumerConfig{Name: "catalog-tag-deleted", Subjects: []string{events.TagDeleted}, Batch: outages(h.tagsDeleted)}, outage(h.tagDeleted)},
		{events.ConsumerConfig{Name: "catalog-category-deleted", Subjects: []string{events.CategoryDeleted}, Batch: outages(h.categoriesDeleted)}, outage(h.categoryDeleted)},
		{events.ConsumerConfig{Name: "catalog-media-deleted", Subjects: []string{events.MediaDeleted}}, outage(h.mediaDeleted)},
	}
	var running []*events.Consumer
	stopAll := func(ctx context.Context) error {
		var errs []error
		for _, c := range running {
			errs = append(errs, c.Stop(ctx))
		}
		return errors.Join(errs...)
	}
	for _, s := range specs {
		c, err := events.StartConsumer(ctx, js, s.cfg, s.fn, log)
		if err != nil {
			_ = stopAll(ctx)
			return nil, err
		}
		running = append(running, c)
	}
	return stopAll, nil
}

// outage and outages mark an error that means MongoDB or taxonomy could not
// be reached as Transient: the event waits for them for as long as they are
// down, instead of moving towards dead-letter after MaxDeliver attempts.
func outage(fn events.Handler) events.Handler {
	return func(ctx context.Context, e events.Envelope) error { return transient(fn(ctx, e)) }
}

func outages(fn events.BatchHandler) events.BatchHandler {
	return func(ctx context.Context, es []events.Envelope) error { return transient(fn(ctx, es)) }
}

func transient(err error) error {
	var unavailable *document.UnavailableError
	if err != nil && !events.IsPermanent(err) && (mongox.IsUnavailable(err) || errors.As(err, &unavailable)) {
		return events.Transient(err)
	}
	return err
}

type handlers struct {
	store    Store
	taxonomy Taxonomy
	log      *slog.Logger
}

// removeTags applies the deletion of tags. A tag id can be created anew
// after its deletion and before the deletion's event is applied here (a
// broker or catalog outage, a redelivery): documents whose references were
// checked since then were checked against the new tag and keep it; only
// those checked before it existed lose the id. The times come from two
// clocks (taxonomy's createdAt, catalog's refsAt), so a document written
// within their skew of the re-creation may be judged wrongly.
func (h handlers) removeTags(ctx context.Context, ids []string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	live, err := h.taxonomy.Tags(ctx, ids)
	if err != nil {
		return 0, err
	}
	for id, since := range live {
		if since.IsZero() { // a taxonomy older than this catalog: wait for its upgrade
			return 0, events.Transient(fmt.Errorf("taxonomy did not say when tag %s was created", id))
		}
	}
	gone := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, ok := live[id]; !ok {
			gone = append(gone, id)
		}
	}
	n, err := h.store.RemoveTags(ctx, gone)
	if err != nil {
		return n, err
	}
	for id, since := range live {
		m, err := h.store.RemoveTagCheckedBefore(ctx, id, since)
		n += m
		if err != nil {
			return n, err
		}
		h.log.InfoContext(ctx, "tag id created anew since its deletion: only documents checked before that lose it",
			"tag_id", id, "created_at", since, "documents", m)
	}
	return n, nil
}

// decode reads e's data into v; data that does not decode, or lacks the id
// it is about, is poison: retrying cannot help.
func decode(e events.Envelope, v any, id func() string) error {
	if err := json.Unmarshal(e.Data, v); err != nil {
		return events.Permanent(fmt.Errorf("%s data: %w", e.Type, err))
	}
	if id() == "" {
		return events.Permanent(fmt.Errorf("%s data lacks its id", e.Type))
	}
	return nil
}

func (h handlers) tagDeleted(ctx context.Context, e events.Envelope) error {
	var d events.TagDeletedData
	if err := decode(e, &d, func() string { return d.TagID }); err != nil {
		return err
	}
	n, err := h.removeTags(ctx, []string{d.TagID})
	if err == nil {
		h.log.InfoContext(ctx, "event applied: tag removed from documents", "event_id", e.ID, "tag_id", d.TagID, "documents", n)
	}
	return err
}

// tagsDeleted applies several tag deletions in one write. Any event that
// does not decode fails the batch, which the consumer then applies event by
// event (and dead-letters the bad one).
func (h handlers) tagsDeleted(ctx context.Context, es []events.Envelope) error {
	ids := make([]string, 0, len(es))
	for _, e := range es {
		var d events.TagDeletedData
		if err := decode(e, &d, func() string { return d.TagID }); err != nil {
			return err
		}
		ids = append(ids, d.TagID)
	}
	n, err := h.removeTags(ctx, ids)
	if err != nil {
		return err
	}
	for i, e := range es {
		h.log.InfoContext(ctx, "event applied: tag removed from documents", "event_id", e.ID, "tag_id", ids[i],
			"batch", len(es), "documents_in_batch", n)
	}
	return nil
}

// categoriesDeleted is tagsDeleted for category events.
func (h handlers) categoriesDeleted(ctx context.Context, es []events.Envelope) error {
	var ids []string
	for _, e := range es {
		var d events.CategoryDeletedData
		if err := decode(e, &d, func() string { return d.CategoryID }); err != nil {
			return err
		}
		ids = append(ids, d.TagsIDs...)
	}
	n, err := h.removeTags(ctx, ids)
	if err == nil {
		h.log.InfoContext(ctx, "events applied: categories' tags removed from documents", "events", len(es), "documents", n)
	}
	return err
}

func (h handlers) categoryDeleted(ctx context.Context, e events.Envelope) error {
	var d events.CategoryDeletedData
	if err := decode(e, &d, func() string { return d.CategoryID }); err != nil {
		return err
	}
	// Each tag also has its own event; removing them here too makes the
	// category event enough on its own, and is harmless twice.
	n, err := h.removeTags(ctx, d.TagsIDs)
	if err == nil {
		h.log.InfoContext(ctx, "event applied: category's tags removed from documents", "event_id", e.ID, "category_id", d.CategoryID, "documents", n)
	}
	return err
}

func (h handlers) mediaDeleted(ctx context.Context, e events.Envelope) error {
	var d events.MediaDeletedData
	if err := decode(e, &d, func() string { return d.MediaID }); err != nil {
		return err
	}
	n, live, err := h.store.DropMedia(ctx, d.MediaID)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		h.log.WarnContext(ctx, "documents that are not deleted used a deleted media (written while it was being deleted); the reference was dropped",
			"event_id", e.ID, "media_id", d.MediaID, "documents", live)
	}
	h.log.InfoContext(ctx, "event applied: media references dropped", "event_id", e.ID, "media_id", d.MediaID, "documents", n)
	return nil
}
