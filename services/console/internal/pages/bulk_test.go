package pages

import (
	"slices"
	"testing"
	"time"

	"github.com/doclib/services/console/internal/boclient"
)

// A tag added or removed in bulk goes where an editor's save would: a
// document's pending changes when it has some (its live version untouched,
// which their publication would overwrite), and its schedule stays.
func TestRetaggedKeepsPendingChangesAndSchedule(t *testing.T) {
	t.Parallel()
	later := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	pending := boclient.Document{ID: "p", Type: "LINK", Title: "Live", URL: "https://x.org", Status: "published", TagIDs: []string{"a"},
		UnpublishAt: later, PublishAt: later, Draft: &boclient.Document{Title: "Pending", URL: "https://x.org/2", TagIDs: []string{"b"}}}
	in, ok := retagged(pending, "c", true)
	if !ok || !in.Draft || in.Title != "Pending" || !slices.Equal(in.TagIDs, []string{"b", "c"}) || in.PublishAt != later || in.UnpublishAt != later {
		t.Errorf("tag added to a document with pending changes: %+v, want the pending changes with c, draft, schedule kept", in)
	}
	live := boclient.Document{ID: "l", Type: "LINK", Title: "Live", URL: "https://x.org", Status: "published", TagIDs: []string{"a", "c"}, UnpublishAt: later}
	in, ok = retagged(live, "c", false)
	if !ok || in.Draft || !slices.Equal(in.TagIDs, []string{"a"}) || in.PublishAt != "" || in.UnpublishAt != later {
		t.Errorf("tag removed from a live document: %+v, want the live version without c, its unpublication kept", in)
	}
	if _, ok := retagged(live, "a", true); ok {
		t.Error("a tag the document has: want nothing to do")
	}
	draft := boclient.Document{ID: "d", Type: "LINK", Title: "Draft", Status: "draft", PublishAt: later}
	if in, _ := retagged(draft, "a", true); in.Draft || in.PublishAt != later {
		t.Errorf("tag added to a scheduled draft: %+v, want the draft itself, its publication kept", in)
	}
	if !slices.Equal(pending.Draft.TagIDs, []string{"b"}) {
		t.Error("retagged changed the document it was given")
	}
}

// A save of a live document keeps its scheduled unpublication (a PATCH
// without unpublishAt clears it).
func TestALiveSaveKeepsTheUnpublication(t *testing.T) {
	t.Parallel()
	later := time.Now().Add(48 * time.Hour).UTC().Format(time.RFC3339)
	f := form{Mode: modeLive, Type: "LINK", Title: "T", URL: "https://x.org", UnpublishAt: later}
	in, bad := f.editorialInput(actSave, time.UTC)
	if bad != nil || in.UnpublishAt != later {
		t.Errorf("live save: unpublishAt %q (err %v), want %q kept", in.UnpublishAt, bad, later)
	}
}

// A refused setting is said once, next to its field, as a sentence in the
// form's words; the top of the page says only that nothing was saved.
func TestSettingsErrorSaidOnce(t *testing.T) {
	t.Parallel()
	e := &boclient.APIError{Status: 422, Code: "validation_failed", Detail: "validation failed",
		Errors: []boclient.FieldError{{Field: "moderatorEmail", Message: "must be an e-mail address"}}}
	d := settingsData{Err: e}
	if got := d.FieldError("moderatorEmail"); got != "The moderation e-mail address must be an e-mail address." {
		t.Errorf("next to the field: %q", got)
	}
	if top := errorOnce(e, settingsLabels); len(top.Errors) != 0 || top.Detail != "Nothing was saved: the fields marked below need attention." {
		t.Errorf("top of the page: %q %v, want the detail only", top.Detail, top.Errors)
	}
}
