// Package consumers decodes the other contexts' deletion events and hands
// them to document.Service, which applies them (document/refs.go says
// how). Every handler is idempotent, so a redelivered event changes
// nothing more. What a handler changed is handed to written (the replica's
// in-memory library), as the HTTP handlers do with their writes, so the
// public side of this replica shows it at once rather than at its next
// look at the store.
package consumers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/mongox"
	"github.com/doclib/services/catalog/internal/document"
)

// Start runs the catalog's three durable consumers until Stop. written
// receives the documents each event changed, once they are stored.
func Start(ctx context.Context, js jetstream.JetStream, svc *document.Service, written func(...document.Document), log *slog.Logger) (stop func(context.Context) error, err error) {
	h := handlers{svc: svc, written: written, log: log}
	specs := []struct {
		cfg events.ConsumerConfig
		fn  events.Handler
	}{
		// A burst of tag deletions (a category with many tags, a clean-up in
		// the back-office) is applied in batches: one pass for many events.
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
// be reached, or documents kept changing under the write for too long, as
// Transient: the event waits for as long as that lasts, instead of moving
// towards dead-letter after MaxDeliver attempts.
func outage(fn events.Handler) events.Handler {
	return func(ctx context.Context, e events.Envelope) error { return transient(fn(ctx, e)) }
}

func outages(fn events.BatchHandler) events.BatchHandler {
	return func(ctx context.Context, es []events.Envelope) error { return transient(fn(ctx, es)) }
}

func transient(err error) error {
	if err != nil && !events.IsPermanent(err) &&
		(mongox.IsUnavailable(err) || document.IsUnavailable(err) || errors.Is(err, document.ErrConflict)) {
		return events.Transient(err)
	}
	return err
}

type handlers struct {
	svc     *document.Service
	written func(...document.Document)
	log     *slog.Logger
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
	changed, err := h.svc.TagsDeleted(ctx, []string{d.TagID})
	h.written(changed...) // stored, even when others failed
	if err == nil {
		h.log.InfoContext(ctx, "event applied: tag removed from documents", "event_id", e.ID, "tag_id", d.TagID, "documents", len(changed))
	}
	return err
}

// tagsDeleted applies several tag deletions in one pass. Any event that
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
	changed, err := h.svc.TagsDeleted(ctx, ids)
	h.written(changed...)
	if err != nil {
		return err
	}
	for i, e := range es {
		h.log.InfoContext(ctx, "event applied: tag removed from documents", "event_id", e.ID, "tag_id", ids[i],
			"batch", len(es), "documents_in_batch", len(changed))
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
	changed, err := h.svc.TagsDeleted(ctx, ids)
	h.written(changed...)
	if err == nil {
		h.log.InfoContext(ctx, "events applied: categories' tags removed from documents", "events", len(es), "documents", len(changed))
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
	changed, err := h.svc.TagsDeleted(ctx, d.TagsIDs)
	h.written(changed...)
	if err == nil {
		h.log.InfoContext(ctx, "event applied: category's tags removed from documents", "event_id", e.ID, "category_id", d.CategoryID, "documents", len(changed))
	}
	return err
}

func (h handlers) mediaDeleted(ctx context.Context, e events.Envelope) error {
	var d events.MediaDeletedData
	if err := decode(e, &d, func() string { return d.MediaID }); err != nil {
		return err
	}
	changed, live, err := h.svc.MediaDeleted(ctx, d.MediaID)
	h.written(changed...)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		h.log.WarnContext(ctx, "documents that are not deleted used a deleted media; the reference was dropped",
			"event_id", e.ID, "media_id", d.MediaID, "documents", live)
	}
	h.log.InfoContext(ctx, "event applied: media references dropped", "event_id", e.ID, "media_id", d.MediaID, "documents", len(changed))
	return nil
}
