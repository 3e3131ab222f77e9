package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// tagged creates a category with tags and a LINK document carrying them,
// and returns the document id.
func tagged(st *Stack, category string, tags ...string) string {
	st.t.Helper()
	st.Must("POST", "/bo/tags-categories", fmt.Sprintf(`{"id":%q,"name":%q}`, category, category), 201)
	for _, tg := range tags {
		st.Must("POST", "/bo/tags", fmt.Sprintf(`{"id":%q,"name":%q,"categoryId":%q}`, tg, tg, category), 201)
	}
	var d docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Doc", "url": "https://x.org", "tagsIds": tags}, 201).JSON(st.t, &d)
	return d.ID
}

func publicTags(st *Stack, docID string) string {
	st.t.Helper()
	var d docJSON
	r := st.Req("GET", "/public/documents/"+docID+"/detail", nil)
	if r.Status != 200 {
		st.t.Fatalf("detail: %d %s", r.Status, r.Body)
	}
	r.JSON(st.t, &d)
	return strings.Join(d.TagsIDs, ",")
}

// TestTagDeletionSurvivesABrokerOutage: with NATS down, DELETE still
// answers 204; the event waits in the taxonomy's outbox and reaches the
// catalog once NATS is back.
func TestTagDeletionSurvivesABrokerOutage(t *testing.T) {
	st := NewStack(t, nil)
	doc := tagged(st, "c", "a", "b")
	st.StopNATS()
	st.Must("DELETE", "/bo/tags/a", nil, 204)
	time.Sleep(500 * time.Millisecond)
	if got := publicTags(st, doc); got != "a,b" {
		t.Fatalf("with NATS down the tag already left the document: %s", got)
	}
	st.StartNATS()
	Eventually(t, 30*time.Second, "tag a leaves the document after NATS returns", func() bool { return publicTags(st, doc) == "b" })
}

// TestBacklogAppliedWhenCatalogReturns: deletions made while the catalog is
// down are applied by its durable consumers when it starts again.
func TestBacklogAppliedWhenCatalogReturns(t *testing.T) {
	st := NewStack(t, nil)
	doc := tagged(st, "c1", "a", "b", "c")
	other := tagged(st, "c2", "d")
	st.Stop("catalog")
	st.Must("DELETE", "/bo/tags/a", nil, 204)
	st.Must("DELETE", "/bo/tags-categories/c2", nil, 204) // and so its tag d
	time.Sleep(300 * time.Millisecond)
	st.Start("catalog")
	Eventually(t, 10*time.Second, "the backlog is applied", func() bool {
		return publicTags(st, doc) == "b,c" && publicTags(st, other) == ""
	})
}

// TestCategoryDeletionRemovesItsTagsFromDocuments within the contract's
// second under normal load.
func TestCategoryDeletionRemovesItsTagsFromDocuments(t *testing.T) {
	st := NewStack(t, nil)
	doc := tagged(st, "c1", "a", "b")
	st.Must("POST", "/bo/tags-categories", `{"id":"keep","name":"Keep"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"k","name":"K","categoryId":"keep"}`, 201)
	st.Must("PATCH", "/bo/documents/"+doc, `{"type":"LINK","title":"Doc","url":"https://x.org","tagsIds":["a","k","b"]}`, 200)
	st.Must("DELETE", "/bo/documents/"+doc, nil, 204) // deleted documents are cleaned too
	st.Must("DELETE", "/bo/tags-categories/c1", nil, 204)
	Eventually(t, time.Second, "the category's tags leave the document within a second", func() bool {
		var d docJSON
		st.Must("GET", "/bo/documents/"+doc+"/detail", nil, 200).JSON(t, &d)
		return strings.Join(d.TagsIDs, ",") == "k"
	})
}
