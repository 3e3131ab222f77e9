package document

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/doclib/libs/validation"
)

// Related documents (CONTRACT.md §9).
const (
	// MaxRelated is how many related documents a detail shows.
	MaxRelated = 5
	// MaxPins is how many related documents an editor may pin.
	MaxPins = 10
)

// Related returns the documents shown as related to d, at most MaxRelated,
// all live and none of them d: first the ones pinned (RelatedIDs) that are
// live, in the order given; then the others by the number of tags they
// share with d, most first, ties by having a tag in the category of d's
// first tag, then newest. A document sharing no tag is added only by a
// pin. get finds a document by id; sharing lists each document that shares
// tags with d once per tag it shares (so its count is the number shared);
// categoryOf gives a tag's category ("" when unknown).
func Related(d *Document, get func(id string) (*Document, bool), sharing []*Document, categoryOf func(tag string) string) []*Document {
	out := make([]*Document, 0, MaxRelated)
	taken := map[string]bool{d.ID: true}
	for _, id := range d.RelatedIDs {
		if len(out) == MaxRelated {
			return out
		}
		if p, ok := get(id); ok && !taken[id] && !p.IsDeleted {
			out, taken[id] = append(out, p), true
		}
	}
	if len(d.TagsIDs) == 0 || len(out) == MaxRelated {
		return out
	}
	first := categoryOf(d.TagsIDs[0])
	type ranked struct {
		doc    *Document
		shared int
		near   bool
	}
	scores := map[string]*ranked{}
	for _, o := range sharing {
		if taken[o.ID] || o.IsDeleted {
			continue
		}
		r := scores[o.ID]
		if r == nil {
			r = &ranked{doc: o}
			for _, t := range o.TagsIDs {
				if first != "" && categoryOf(t) == first {
					r.near = true
					break
				}
			}
			scores[o.ID] = r
		}
		r.shared++
	}
	before := func(a, b *ranked) bool {
		if a.shared != b.shared {
			return a.shared > b.shared
		}
		if a.near != b.near {
			return a.near
		}
		if c := a.doc.CreatedAt.Compare(b.doc.CreatedAt); c != 0 {
			return c > 0
		}
		return a.doc.ID > b.doc.ID
	}
	// The best few, kept in order as the candidates go by: no full sort.
	best := make([]*ranked, 0, MaxRelated-len(out))
	for _, r := range scores {
		i := len(best)
		for i > 0 && before(r, best[i-1]) {
			i--
		}
		if i == cap(best) {
			continue
		}
		if len(best) < cap(best) {
			best = append(best, nil)
		}
		copy(best[i+1:], best[i:len(best)-1])
		best[i] = r
	}
	for _, r := range best {
		out = append(out, r.doc)
	}
	return out
}

// checkPins adds to errs what is wrong with the pinned ids of a body: more
// than MaxPins, or one that is the document itself (self: its id, "" for a
// new one), repeated, or, among the pins being added (not in stored, the
// document's pins before the write), unknown or deleted. A pin already
// stored is a reference like a tag: its document being deleted does not
// make the body wrong, and one purged since is dropped from d's pins (the
// purge drops it from stored documents too: Service.PurgeTrash).
func checkPins(ctx context.Context, store Store, d *Document, stored []string, self string, errs *validation.Errors) error {
	ids := d.RelatedIDs
	if len(ids) > MaxPins {
		errs.Add("relatedIds", "must hold at most %d documents (got %d)", MaxPins, len(ids))
		return nil
	}
	var purged []string
	for i, id := range ids {
		field := fmt.Sprintf("relatedIds[%d]", i)
		if self != "" && id == self {
			errs.Add(field, "is the document itself")
			continue
		}
		if j := slices.Index(ids, id); j < i {
			errs.Add(field, "repeats relatedIds[%d]", j)
			continue
		}
		if id == "" || len(id) > MaxRefIDLen {
			errs.Add(field, "unknown document '%s'", clip(id))
			continue
		}
		kept := slices.Contains(stored, id)
		p, err := store.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound) && kept:
			purged = append(purged, id)
		case errors.Is(err, ErrNotFound):
			errs.Add(field, "unknown document '%s'", clip(id))
		case err != nil:
			return err
		case p.IsDeleted && !kept:
			errs.Add(field, "document '%s' is deleted", id)
		}
	}
	d.RelatedIDs = slices.DeleteFunc(d.RelatedIDs, func(id string) bool { return slices.Contains(purged, id) })
	return nil
}

// dropPins removes the ids from d's pins, and reports whether d changed.
func dropPins(d *Document, ids []string) bool {
	n := len(d.RelatedIDs)
	d.RelatedIDs = slices.DeleteFunc(d.RelatedIDs, func(id string) bool { return slices.Contains(ids, id) })
	return len(d.RelatedIDs) != n
}
