package pages

// The editorial workflow as the edit page offers it. A form is in one of
// four modes, fixed when it is opened (and checked by the API with the
// form's ETag, so a document that changed meanwhile is a 412):
//
//   - new: Publish creates it published, Save draft creates a draft,
//     Schedule a draft with its publication time;
//   - draft: every save writes the draft; Publish saves then publishes;
//   - live (published, no pending changes): Save edits the live version,
//     Save draft keeps the form as pending changes beside it;
//   - pending (published, with pending changes): the form holds the
//     pending changes and every save writes them (never the live version,
//     which the next publication would replace with older changes);
//     Publish saves them then makes them live.
//
// A PATCH replaces the schedule, so a save of a draft or of pending
// changes sends the one the form shows (cleared when the field is empty).

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
)

// The modes of a form.
const (
	modeNew     = ""
	modeDraft   = "draft"
	modeLive    = "live"
	modePending = "pending"
)

// The actions of the edit form's buttons ("" is the form's default: a
// save in its mode, as Enter in a field sends it).
const (
	actSave     = ""
	actDraft    = "draft"
	actSchedule = "schedule"
	actPublish  = "publish"
)

// modeOf is the mode a form opened on d is in.
func modeOf(d boclient.Document) string {
	switch {
	case d.Status == "draft":
		return modeDraft
	case d.Draft != nil:
		return modePending
	}
	return modeLive
}

// drafting reports whether a save of f with act writes a draft or pending
// changes (which the schedule applies to).
func (f form) drafting(act string) bool {
	switch f.Mode {
	case modeDraft, modePending:
		return true
	}
	return act == actDraft || act == actSchedule
}

// editorialInput is the API body of a save of f with act: where it goes
// and the schedule it keeps or sets. Its error is about the schedule
// field, in the form's words.
func (f form) editorialInput(act string, loc *time.Location) (boclient.DocumentInput, *boclient.APIError) {
	in := f.input()
	in.UnpublishAt = f.UnpublishAt // a PATCH without it would clear it
	if !f.drafting(act) {
		return in, nil
	}
	if f.Mode == modeNew {
		in.Status = "draft"
	} else if f.Mode != modeDraft {
		in.Draft = true
	}
	if act == actPublish { // published at once: the schedule goes
		return in, nil
	}
	if f.PublishAt == "" {
		if act == actSchedule {
			return in, scheduleError("Pick the date and time at which to publish.")
		}
		return in, nil
	}
	at, ok := parseLocal(f.PublishAt, loc)
	if !ok {
		return in, scheduleError("Enter a date and time, such as 2026-12-01 09:00.")
	}
	if !at.After(time.Now()) {
		return in, scheduleError("Pick a time in the future; to publish now, press Publish.")
	}
	in.PublishAt = at.UTC().Format(time.RFC3339)
	return in, nil
}

func scheduleError(msg string) *boclient.APIError {
	return &boclient.APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
		Detail: "Nothing was saved: the publication time needs attention.",
		Errors: []boclient.FieldError{{Field: "publishAt", Message: msg}}}
}

// localLayouts are the values a datetime-local field sends.
var localLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04"}

// parseLocal reads a datetime-local value as a time in loc.
func parseLocal(v string, loc *time.Location) (time.Time, bool) {
	for _, l := range localLayouts {
		if t, err := time.ParseInLocation(l, strings.TrimSpace(v), loc); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// localInput is an RFC 3339 time as a datetime-local value in loc ("" for
// none).
func localInput(rfc string, loc *time.Location) string {
	t, err := time.Parse(time.RFC3339Nano, rfc)
	if err != nil {
		return ""
	}
	return t.In(loc).Format("2006-01-02T15:04")
}

// afterSave runs what act asks once the form is saved (a publication),
// and says which notice the document's page shows.
func (p *Pages) afterSave(ctx context.Context, token string, f form, act string, doc boclient.Document, etag string, create bool) (string, error) {
	if act == actPublish && f.drafting(act) {
		if _, err := p.cfg.API.PublishDocument(ctx, token, doc.ID, etag); err != nil {
			return "", err
		}
		return "published", nil
	}
	switch {
	case doc.PublishAt != "" && f.drafting(act):
		return "scheduled", nil
	case create && act == actDraft:
		return "draft-created", nil
	case create:
		return "created", nil
	case doc.Status == "draft":
		return "draft-saved", nil
	case doc.Draft != nil:
		return "pending-saved", nil
	}
	return "saved", nil
}

// editorialAction is one of the document page's workflow buttons outside
// the form: Unpublish, or Discard pending changes; the ETag posted makes a
// document changed meanwhile a 412.
func (p *Pages) editorialAction(what string, act func(p *Pages, ctx context.Context, token, id, etag string) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		s, ctx, cancel, ok := p.writing(c)
		if !ok {
			return
		}
		defer cancel()
		id := c.Param("id")
		if err := act(p, ctx, s.Token, id, c.PostForm("etag")); err != nil {
			p.fail(c, explain(boclient.AsAPIError(err)))
			return
		}
		c.Redirect(http.StatusSeeOther, Base+"/documents/"+url.PathEscape(id)+"?done="+what)
	}
}

func unpublish(p *Pages, ctx context.Context, token, id, etag string) error {
	_, err := p.cfg.API.UnpublishDocument(ctx, token, id, etag)
	return err
}

func discard(p *Pages, ctx context.Context, token, id, etag string) error {
	_, err := p.cfg.API.DiscardDraft(ctx, token, id, etag)
	return err
}

// badge is a document's state as shown beside its title.
type badge struct{ Label, Class, Title string }

// badgesOf is a document's states: deleted, draft or published, pending
// changes, scheduled.
func badgesOf(status string, deleted, pending bool, publishAt string) []badge {
	var out []badge
	switch {
	case deleted:
		out = append(out, badge{Label: "Deleted", Class: "deleted"})
	case status == "draft":
		out = append(out, badge{Label: "Draft", Class: "draft", Title: "Not shown in the app"})
	default:
		out = append(out, badge{Label: "Published", Class: "published", Title: "Shown in the app"})
	}
	if pending && !deleted {
		out = append(out, badge{Label: "Pending changes", Class: "pending", Title: "Changes saved but not yet live"})
	}
	if publishAt != "" && !deleted {
		out = append(out, badge{Label: "Scheduled", Class: "scheduled", Title: "To be published at " + publishAt})
	}
	return out
}
