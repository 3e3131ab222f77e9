package document

// The reference rule: a live document's tags, PDF file and images name
// tags and media that exist. Taxonomy owns tags and media owns media, so
// the catalog learns of a deletion by asking them (at write time) and by
// their deletion events (afterwards). This file is every part of the rule.
//
// # Before a write: check, then commit against the guards
//
// A create, PATCH or restore reads the guards of the references it may
// add (Store: a record per tag or media id, whose counter a deletion
// raises), asks taxonomy and media about them (checkRefs), then commits
// in one transaction that checks the guards are as read. No document is
// held while another service is asked. An unknown tag or media, or a
// media whose deletion is under way, is a 422 naming the field; an
// unreachable service is a 503 and nothing changes.
//
// A deletion raises the guard before it looks for the documents naming
// the reference. A media deletion marks the media as being deleted, then
// asks the catalog who uses it (MediaUsers: raise, then read). Either the
// save's transaction committed before the raise, and the deletion's read
// sees the document and refuses the deletion (409); or the raise came
// first, and the save's transaction finds the guard changed: the save runs
// again, its check now sees the media being deleted, and it is refused
// (422). The two transactions write the same guard record, so on MongoDB
// one that overlaps the other waits for or retries after it. Both can
// never succeed, and a live document never loses a media it was told it
// has. A tag deletion is the same with its event in place of the
// question: the event's handler raises the tags' guards, then updates
// every document naming them (UpdateNaming), so a tag deleted during a
// save either leaves the saved document right after it or refuses the
// save. Only then does it ask taxonomy whether the id was created anew
// (below): asked before, a tag created anew and a document written
// against it in between looked like the deleted one, and the document
// lost it. refs_race_test.go interleaves a save, and a restore, with each
// deletion both ways.
//
// # A tag id created anew
//
// Tag ids are the caller's and can be used again at once after a deletion;
// the deletion's event may arrive after that (a broker or catalog outage,
// a redelivery). Each reference remembers which tag it was checked
// against: the tag's createdAt, as taxonomy gave it (TagSince). A late
// deletion event removes the id only from documents that were not checked
// against the tag that exists now under that id. Documents stored before
// TagSince was kept are judged by their updatedAt against that tag's
// creation (two clocks; the only place where they meet).
//
// # After a deletion: its event
//
// A tag's deletion (alone or with its category) removes the tag from every
// document, deleted ones too. A media's deletion removes it from every
// document that still names it: deleted ones, since a live one cannot
// (above); should one still, it loses the reference too rather than keep
// one to bytes that are gone, and the handler logs it.
//
// # Restore
//
// A document in the trash kept receiving deletion events, so its tags are
// current. Its media are asked again, against their guards as a save's
// are: one gone, or being deleted, is dropped from the restored document
// (the answer shows it), because the document could otherwise become live
// with a media whose deletion no longer asks.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/doclib/libs/validation"
)

// checkRefs asks taxonomy and media about the references of d (from
// validate): unknown ones, media being deleted, and media of the wrong type
// are added to errs; d gets each tag's TagSince and its file's name. Lists
// too long to be valid are not asked about (validate reported them), so a
// huge list never reaches another service.
func checkRefs(ctx context.Context, refs References, d *Document, errs *validation.Errors) error {
	if len(d.TagsIDs) > 0 && len(d.TagsIDs) <= MaxTags {
		found, err := refs.Tags(ctx, askable(d.TagsIDs))
		if err != nil {
			return err
		}
		d.TagSince = make(map[string]time.Time, len(found))
		for i, id := range d.TagsIDs {
			created, ok := found[id]
			if !ok {
				errs.Add(fmt.Sprintf("tagsIds[%d]", i), "unknown tag '%s'", clip(id))
				continue
			}
			d.TagSince[id] = created
		}
	}
	var ids []string
	if d.File != nil {
		ids = append(ids, d.File.ID)
	}
	if len(d.ImagesIDs) <= MaxImages {
		ids = append(ids, d.ImagesIDs...)
	}
	if len(ids) == 0 {
		return nil
	}
	medias, err := refs.Medias(ctx, askable(ids))
	if err != nil {
		return err
	}
	if d.File != nil {
		switch m, ok := medias[d.File.ID]; {
		case !ok:
			errs.Add("fileId", "unknown media '%s'", clip(d.File.ID))
		case m.Deleting:
			errs.Add("fileId", "media '%s' is being deleted", clip(d.File.ID))
		case m.MimeType != PDFMimeType:
			errs.Add("fileId", "media '%s' is %s, not a PDF", d.File.ID, m.MimeType)
		default:
			d.File.Name = m.Name
		}
	}
	for i, id := range d.ImagesIDs {
		switch m, ok := medias[id]; {
		case !ok:
			errs.Add(fmt.Sprintf("imagesIds[%d]", i), "unknown media '%s'", clip(id))
		case m.Deleting:
			errs.Add(fmt.Sprintf("imagesIds[%d]", i), "media '%s' is being deleted", clip(id))
		case !strings.HasPrefix(m.MimeType, imageMimeType):
			errs.Add(fmt.Sprintf("imagesIds[%d]", i), "media '%s' is %s, not an image", id, m.MimeType)
		}
	}
	return nil
}

// dropUnusableMedia removes from d (being restored) the media that are gone
// or being deleted, and returns their ids.
func dropUnusableMedia(ctx context.Context, refs References, d *Document) ([]string, error) {
	ids := d.Refs().Media
	if len(ids) == 0 {
		return nil, nil
	}
	found, err := refs.Medias(ctx, ids)
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, id := range ids {
		if m, ok := found[id]; !ok || m.Deleting {
			dropped = append(dropped, id)
		}
	}
	dropMedia(d, dropped)
	if d.Draft != nil {
		dropMedia(d.Draft, dropped)
	}
	return dropped, nil
}

// dropDeletedTags applies the deletion of the tags ids to d. live holds the
// ids that exist again (created anew since), with their creation time; d
// keeps such an id only if it was checked against that tag. It reports
// whether d changed.
func dropDeletedTags(d *Document, ids []string, live map[string]time.Time) bool {
	n := len(d.TagsIDs)
	d.TagsIDs = slices.DeleteFunc(d.TagsIDs, func(id string) bool {
		if !slices.Contains(ids, id) {
			return false
		}
		created, anew := live[id]
		if !anew {
			return true
		}
		if since, ok := d.TagSince[id]; ok {
			return !since.Equal(created)
		}
		return d.UpdatedAt.Before(created) // stored before TagSince was kept
	})
	for id := range d.TagSince {
		if !slices.Contains(d.TagsIDs, id) {
			delete(d.TagSince, id)
		}
	}
	return len(d.TagsIDs) != n
}

// dropMedia removes the media ids from d's file and images, and reports
// whether d changed.
func dropMedia(d *Document, ids []string) bool {
	changed := false
	if d.File != nil && slices.Contains(ids, d.File.ID) {
		d.File, changed = nil, true
	}
	n := len(d.ImagesIDs)
	d.ImagesIDs = slices.DeleteFunc(d.ImagesIDs, func(id string) bool { return slices.Contains(ids, id) })
	return changed || len(d.ImagesIDs) != n
}
