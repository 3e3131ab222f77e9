package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// hooksOf returns the verified payloads rc got, in order, of the types
// listed.
func hooksOf(t *testing.T, rc *hookReceiver, secret string, types ...string) []payload {
	t.Helper()
	var out []payload
	for _, h := range rc.distinct() {
		if p := verify(t, secret, h); slices.Contains(types, p.Type) {
			out = append(out, p)
		}
	}
	return out
}

// TestWebhooksDeliverTaxonomyChanges: a subscription to tag.* gets a tag's
// creation and renaming within seconds, with the ids, the new name and who
// made it; category.* gets the category's.
func TestWebhooksDeliverTaxonomyChanges(t *testing.T) {
	st := NewStack(t, nil)
	tags, cats := newHookReceiver(t, nil), newHookReceiver(t, nil)
	ts := st.subscribe(tags.srv.URL, "tag.*")
	cs := st.subscribe(cats.srv.URL, "category.*", "config.changed")
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "live", "name": "Live"}, 201)
	st.Must("POST", "/bo/tags", map[string]string{"id": "live-t", "name": "Fresh", "categoryId": "live"}, 201)
	st.Must("PATCH", "/bo/tags/live-t", map[string]string{"name": "Renamed"}, 200)
	st.Must("PUT", "/bo/config", map[string]string{"moderatorEmail": "live@example.org"}, 200)

	Eventually(t, 10*time.Second, "tag.created and tag.renamed at the tag.* receiver", func() bool {
		return len(hooksOf(t, tags, ts.Secret, "tag.created", "tag.renamed")) >= 2
	})
	got := hooksOf(t, tags, ts.Secret, "tag.created", "tag.renamed")
	want := []struct{ typ, data string }{
		{"tag.created", fmt.Sprintf(`{"tagId":"live-t","categoryId":"live","name":"Fresh","actor":%q}`, TokenName)},
		{"tag.renamed", fmt.Sprintf(`{"tagId":"live-t","categoryId":"live","name":"Renamed","actor":%q}`, TokenName)},
	}
	for i, w := range want {
		if got[i].Type != w.typ || string(got[i].Data) != w.data || time.Since(got[i].Timestamp) > time.Minute {
			t.Errorf("webhook %d = %s %s at %v, want %s %s now", i, got[i].Type, got[i].Data, got[i].Timestamp, w.typ, w.data)
		}
	}
	Eventually(t, 10*time.Second, "category.created and config.changed at the other receiver", func() bool {
		return len(hooksOf(t, cats, cs.Secret, "category.created", "config.changed")) >= 2
	})
	if n := len(hooksOf(t, cats, cs.Secret, "tag.created", "tag.renamed")); n != 0 {
		t.Errorf("the category.* receiver got %d tag webhooks", n)
	}
}

// TestWebhooksDeliverDocumentChanges: a subscription to document.* gets a
// document's creation and its edit, each within seconds of its answer,
// about that document, with the change-sequence number and its author.
func TestWebhooksDeliverDocumentChanges(t *testing.T) {
	st := NewStack(t, nil)
	rc := newHookReceiver(t, nil)
	s := st.subscribe(rc.srv.URL, "document.*")
	var d struct{ ID string }
	created := time.Now()
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Live", "url": "https://example.org/live"}, 201).JSON(t, &d)
	Eventually(t, 5*time.Second, "document.created within seconds of the answer", func() bool {
		return len(hooksOf(t, rc, s.Secret, "document.created")) >= 1
	})
	edited := time.Now()
	st.Must("PATCH", "/bo/documents/"+d.ID, map[string]any{"type": "LINK", "title": "Live, edited", "url": "https://example.org/live"}, 200)
	edits := []string{"document.updated", "document.draft_saved"}
	Eventually(t, 5*time.Second, "the edit's webhook within seconds of the answer", func() bool {
		return len(hooksOf(t, rc, s.Secret, edits...)) >= 1
	})
	t.Logf("creation delivered %v after its request, the edit %v", rc.distinct()[0].At.Sub(created), time.Since(edited))
	var seq int64
	for _, p := range hooksOf(t, rc, s.Secret, append(edits, "document.created")...) {
		var data struct {
			DocumentID, Actor string
			Seq               int64
		}
		if err := json.Unmarshal(p.Data, &data); err != nil || data.DocumentID != d.ID || data.Actor != TokenName || data.Seq <= seq {
			t.Errorf("%s %s: want documentId %s, actor %s and a seq after %d", p.Type, p.Data, d.ID, TokenName, seq)
		}
		seq = data.Seq
	}
}
