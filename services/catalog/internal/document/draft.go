package document

// Drafts and publication. A document is Published or Draft. The content
// fields of a Document are its live version when it is published, its
// draft when it is a draft; a published document may also carry pending
// changes (Draft: content fields only) that the public side never sees
// until they are published. PublicView is the one place that decides what
// the public side sees.
//
// A scheduled publication (PublishAt) or unpublication (UnpublishAt) is
// applied by RunSchedule, which every replica runs often: each due
// document is changed by the store's one write path, and the rule
// re-checks that the schedule is still due on the document as the
// transaction commits it, so however many replicas find it due, exactly
// one applies it.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/validation"
)

// Status is whether a document is public.
type Status string

// The two statuses.
const (
	Published Status = "published"
	Draft     Status = "draft"
)

// Errors of publication.
var (
	ErrNothingToPublish = errors.New("nothing to publish")
	ErrNotPublished     = errors.New("document is not published")
	ErrNoDraft          = errors.New("document has no pending changes")
)

// State returns d's status (documents stored before drafts are published).
func (d Document) State() Status {
	if d.Status == "" {
		return Published
	}
	return d.Status
}

// PublicView returns what the public side may show of d: its live version,
// without pending changes nor schedule, and whether the public side shows
// it at all (not a draft, not deleted, not purged).
func PublicView(d Document) (Document, bool) {
	v := d
	v.Draft, v.PublishAt, v.UnpublishAt = nil, time.Time{}, time.Time{}
	return v, !d.IsDeleted && !d.Purged() && d.State() == Published
}

// contentOf returns the content fields of d (what a draft holds).
func contentOf(d Document) Document {
	return Document{Type: d.Type, Title: d.Title, URL: d.URL, TagsIDs: d.TagsIDs, TagSince: d.TagSince,
		Content: d.Content, Sources: d.Sources, ImagesIDs: d.ImagesIDs, File: d.File, RelatedIDs: d.RelatedIDs}.Clone()
}

// setContent replaces d's content fields with c's.
func (d *Document) setContent(c Document) {
	c = c.Clone()
	d.Title, d.URL, d.TagsIDs, d.TagSince, d.Content = c.Title, c.URL, c.TagsIDs, c.TagSince, c.Content
	d.Sources, d.ImagesIDs, d.File, d.RelatedIDs = c.Sources, c.ImagesIDs, c.File, c.RelatedIDs
}

// drafting reports whether a write of in to d (nil: a create) writes a
// draft or pending changes, which publishAt applies to.
func drafting(in Input, d *Document) bool {
	if d == nil {
		return Status(in.Status) == Draft
	}
	return in.Draft || d.State() == Draft
}

// ParseDateTime reads an RFC 3339 date-time, whose "T" and "Z" may be
// written in lower case (RFC 3339 §5.6).
func ParseDateTime(raw string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, strings.ToUpper(raw))
}

// schedule is a body's publishAt and unpublishAt, parsed.
type schedule struct{ publishAt, unpublishAt time.Time }

// checkSchedule validates the status and schedule of a body. publishAt
// must be in the future (to publish now, publish), and applies only to a
// draft or pending changes; unpublishAt must be in the future, and after
// publishAt.
func checkSchedule(in Input, draft bool, now time.Time, errs *validation.Errors) schedule {
	if in.Status != "" && in.Status != string(Published) && in.Status != string(Draft) {
		errs.Add("status", "must be one of published, draft (got '%s')", clip(in.Status))
	}
	var s schedule
	parse := func(field, raw string) time.Time {
		if raw == "" {
			return time.Time{}
		}
		t, err := ParseDateTime(raw)
		switch {
		case err != nil:
			errs.Add(field, "must be a date-time like 2026-12-01T09:00:00Z (got '%s')", clip(raw))
		case !t.After(now):
			errs.Add(field, "must be in the future (got %s); to publish or unpublish now, POST /bo/documents/{id}/%s",
				t.UTC().Format(time.RFC3339), map[string]string{"publishAt": "publish", "unpublishAt": "unpublish"}[field])
		}
		return t.UTC().Truncate(time.Millisecond)
	}
	s.publishAt, s.unpublishAt = parse("publishAt", in.PublishAt), parse("unpublishAt", in.UnpublishAt)
	if !s.publishAt.IsZero() && !draft {
		errs.Add("publishAt", "applies to a draft or to pending changes (\"status\": \"draft\", or \"draft\": true)")
	}
	if !s.publishAt.IsZero() && !s.unpublishAt.IsZero() && !s.unpublishAt.After(s.publishAt) {
		errs.Add("unpublishAt", "must be after publishAt")
	}
	return s
}

// Overdue is a schedule a restore or an import cleared because its time
// had passed: a past time is never taken as "now" (a draft restored from
// the trash after its publishAt stays a draft). Zero times: nothing
// cleared.
type Overdue struct{ PublishAt, UnpublishAt time.Time }

// Any reports whether something was cleared.
func (o Overdue) Any() bool { return !o.PublishAt.IsZero() || !o.UnpublishAt.IsZero() }

// clearOverdue clears d's scheduled publication whose time is not after
// now (a past time is never taken as now), and applies its scheduled
// unpublication whose time is not after now: what was meant to go offline
// by then stays offline, a draft. It says which it cleared.
func clearOverdue(d *Document, now time.Time) Overdue {
	var o Overdue
	if !d.PublishAt.IsZero() && !d.PublishAt.After(now) {
		o.PublishAt, d.PublishAt = d.PublishAt, time.Time{}
	}
	if !d.UnpublishAt.IsZero() && !d.UnpublishAt.After(now) {
		o.UnpublishAt = d.UnpublishAt
		unpublish(d)
		d.UnpublishAt = time.Time{}
	}
	return o
}

// land puts the checked content of a PATCH into d: as pending changes when
// the body asks for a draft of a published document, else as its content.
func land(d *Document, in Input, checked Document, sc schedule) {
	c := contentOf(checked)
	if in.Draft && d.State() == Published {
		d.Draft = &c
	} else {
		d.setContent(c)
	}
	d.PublishAt, d.UnpublishAt = sc.publishAt, sc.unpublishAt
}

// Publish makes a draft public, or a published document's pending changes
// live.
func (s *Service) Publish(ctx context.Context, id string) (Document, error) {
	d, err := s.store.Update(ctx, id, Refs{}, s.write(ctx, WhyPublish, func(d *Document) error {
		if d.IsDeleted {
			return ErrDeleted
		}
		if !publish(d) {
			return ErrNothingToPublish
		}
		d.PublishedAt = s.now()
		d.UpdatedAt, d.UpdatedBy = s.after(d.UpdatedAt), identity.Name(ctx)
		return nil
	}))
	return d, err
}

// publish applies a publication to d and reports whether there was one.
func publish(d *Document) bool {
	switch {
	case d.State() == Draft:
		d.Status = Published
	case d.Draft != nil:
		d.setContent(*d.Draft)
		d.Draft = nil
	default:
		return false
	}
	d.PublishAt = time.Time{}
	return true
}

// unpublish takes d back to draft; its pending changes, if any, become the
// draft (the latest work; the live version is in the revisions).
func unpublish(d *Document) bool {
	if d.State() != Published {
		return false
	}
	d.Status = Draft
	if d.Draft != nil {
		d.setContent(*d.Draft)
		d.Draft = nil
	}
	d.UnpublishAt = time.Time{}
	return true
}

// Unpublish takes a published document back to draft: the public side
// sees it removed.
func (s *Service) Unpublish(ctx context.Context, id string) (Document, error) {
	d, err := s.store.Update(ctx, id, Refs{}, s.write(ctx, WhyUnpublish, func(d *Document) error {
		if d.IsDeleted {
			return ErrDeleted
		}
		if !unpublish(d) {
			return ErrNotPublished
		}
		d.UpdatedAt, d.UpdatedBy = s.after(d.UpdatedAt), identity.Name(ctx)
		return nil
	}))
	return d, err
}

// DiscardDraft drops a published document's pending changes (and their
// scheduled publication).
func (s *Service) DiscardDraft(ctx context.Context, id string) (Document, error) {
	d, err := s.store.Update(ctx, id, Refs{}, s.write(ctx, WhyDiscardDraft, func(d *Document) error {
		if d.IsDeleted {
			return ErrDeleted
		}
		if d.Draft == nil {
			return ErrNoDraft
		}
		d.Draft, d.PublishAt = nil, time.Time{}
		d.UpdatedAt, d.UpdatedBy = s.after(d.UpdatedAt), identity.Name(ctx)
		return nil
	}))
	return d, err
}

// RunSchedule applies the publications and unpublications due at now, at
// most limit documents a call, and returns the documents it changed.
func (s *Service) RunSchedule(ctx context.Context, now time.Time, limit int) ([]Document, error) {
	ids, err := s.store.Scheduled(ctx, now, limit)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	changed, err := s.store.UpdateEach(ctx, ids, s.write(ctx, WhyScheduled, func(d *Document) error {
		return applyDue(d, now, s.now())
	}))
	return changed, err
}

// applyDue applies to d what its schedule says is due at now; ErrUnchanged
// when nothing is (applied by another replica meanwhile).
func applyDue(d *Document, now, at time.Time) error {
	if d.IsDeleted {
		return ErrUnchanged // a deleted document keeps its schedule for a restore
	}
	done := false
	if !d.PublishAt.IsZero() && !d.PublishAt.After(now) && publish(d) {
		d.PublishedAt, done = at, true
	}
	if !d.UnpublishAt.IsZero() && !d.UnpublishAt.After(now) {
		done = unpublish(d) || done
		d.UnpublishAt = time.Time{}
	}
	if !done {
		return ErrUnchanged
	}
	d.UpdatedAt = at
	return nil
}

// Dropped lists the references a restored revision no longer held.
type Dropped struct {
	TagsIDs    []string
	MediaIDs   []string
	RelatedIDs []string
}

// RestoreRevision writes the content of revision version of document id
// as the document's current content (a new revision): its live content if
// published (the app sees it at once), its draft if a draft; status,
// pending changes and schedule are left as they are. References that no
// longer hold are dropped, and returned.
func (s *Service) RestoreRevision(ctx context.Context, id string, version int64) (Document, Dropped, error) {
	rev, err := s.Revision(ctx, id, version)
	if err != nil {
		return Document{}, Dropped{}, err
	}
	old := contentOf(rev.Doc)
	var dropped Dropped
	d, err := s.store.Update(ctx, id, old.Refs(), s.write(ctx, WhyRestoreRevision, func(d *Document) error {
		if d.IsDeleted {
			return ErrDeleted
		}
		c := old.Clone()
		var err error
		if dropped, err = s.dropStale(ctx, &c, d.ID); err != nil {
			return err
		}
		d.setContent(c)
		d.UpdatedAt, d.UpdatedBy = s.after(d.UpdatedAt), identity.Name(ctx)
		return nil
	}))
	return d, dropped, err
}

// dropStale removes from c (old content) the tags gone or created anew
// since, the media gone or being deleted, and the pins to documents gone
// or deleted, and says which.
func (s *Service) dropStale(ctx context.Context, c *Document, self string) (Dropped, error) {
	var out Dropped
	if len(c.TagsIDs) > 0 {
		live, err := s.refs.Tags(ctx, c.TagsIDs)
		if err != nil {
			return out, err
		}
		var keep []string
		for _, id := range c.TagsIDs {
			created, ok := live[id]
			if since, known := c.TagSince[id]; !ok || (known && !since.Equal(created)) {
				out.TagsIDs = append(out.TagsIDs, id)
				delete(c.TagSince, id)
				continue
			}
			keep = append(keep, id)
		}
		c.TagsIDs = orEmpty(keep)
	}
	media, err := dropUnusableMedia(ctx, s.refs, c)
	if err != nil {
		return out, err
	}
	out.MediaIDs = media
	var pins []string
	for _, id := range c.RelatedIDs {
		p, err := s.store.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound) || (err == nil && p.IsDeleted) || id == self:
			out.RelatedIDs = append(out.RelatedIDs, id)
		case err != nil:
			return out, err
		default:
			pins = append(pins, id)
		}
	}
	c.RelatedIDs = orEmpty(pins)
	if c.Type == PDF && c.File == nil {
		return out, fmt.Errorf("%w: its file is gone", ErrRevisionUnusable)
	}
	return out, nil
}

// ErrRevisionUnusable: a revision that cannot be restored (a PDF whose
// file is gone: a PDF document must have one).
var ErrRevisionUnusable = errors.New("the revision cannot be restored")
