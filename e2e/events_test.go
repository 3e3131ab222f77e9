package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
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

// TestMediaDeletedUnderALiveDocument: a document written while its media
// was being deleted can still name the media when the deletion's event
// arrives (its references were checked before the media was marked, and it
// was stored after the media service asked the catalog for users). The
// catalog drops that reference too, and logs a warning naming the document.
// The race is simulated by publishing the media service's event for a media
// that a live document uses.
func TestMediaDeletedUnderALiveDocument(t *testing.T) {
	st := NewStack(t, nil)
	img, kept := st.Upload("raced.png", unique(pngBytes, "raced")), st.Upload("kept.png", unique(pngBytes, "kept"))
	var d docJSON
	st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"MARKDOWN","title":"Raced","content":"x","imagesIds":[%q,%q]}`, img, kept), 201).JSON(t, &d)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, err := events.Connect(ctx, "nats://"+st.natsAt, "e2e", testkit.Logger(t))
	testkit.Must(t, err, "connect to NATS")
	defer nc.Close()
	ev, err := events.New(ctx, "/media", events.MediaDeleted, events.MediaDeletedData{MediaID: img}, time.Now())
	testkit.Must(t, err, "event")
	testkit.Must(t, events.NewPublisher(js, testkit.Logger(t)).PublishEvent(ctx, ev), "publish")

	Eventually(t, 10*time.Second, "the live document drops the deleted media", func() bool {
		var got docJSON
		st.Must("GET", "/public/documents/"+d.ID+"/detail", nil, 200).JSON(t, &got)
		return strings.Join(got.ImagesIDs, ",") == kept
	})
	// The log line follows the write that the detail already shows.
	Eventually(t, 5*time.Second, "a warning naming the document in the catalog's log", func() bool {
		return st.logs.Contains("used a deleted media") && st.logs.Contains(d.ID)
	})
}

// TestWritesRacingATagDeletionDoNotKeepIt: documents created while their
// tag is being deleted (checked before the deletion, stored after its event
// was applied) lose the tag too, once the dust settles.
func TestWritesRacingATagDeletionDoNotKeepIt(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"c"}`, 201)
	for trial := range 3 {
		tg := fmt.Sprintf("x%d", trial)
		st.Must("POST", "/bo/tags", fmt.Sprintf(`{"id":%q,"name":%q,"categoryId":"c"}`, tg, tg), 201)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				body := map[string]any{"type": "LINK", "title": "T", "url": "https://x.org", "tagsIds": []string{tg}}
				for {
					select {
					case <-stop:
						return
					default:
					}
					st.Req("POST", "/bo/documents", body, "Authorization", "Bearer "+Token)
				}
			}()
		}
		time.Sleep(300 * time.Millisecond)
		st.Must("DELETE", "/bo/tags/"+tg, nil, 204)
		time.Sleep(500 * time.Millisecond)
		close(stop)
		wg.Wait()
		Eventually(t, 10*time.Second, "no document keeps the deleted tag "+tg, func() bool {
			var docs []docJSON
			st.Must("GET", "/bo/documents", nil, 200).JSON(t, &docs)
			for _, d := range docs {
				if slices.Contains(d.TagsIDs, tg) {
					return false
				}
			}
			return true
		})
	}
}

// TestLateDeletionSparesATagCreatedAnew: tag a is deleted while NATS is
// down, created again and put on a new document; when the old deletion's
// event finally arrives, it takes a off the old document only.
func TestLateDeletionSparesATagCreatedAnew(t *testing.T) {
	st := NewStack(t, nil)
	old := tagged(st, "c", "a", "b")
	st.StopNATS()
	st.Must("DELETE", "/bo/tags/a", nil, 204)
	time.Sleep(50 * time.Millisecond) // the two clocks are the same here; the new tag must be visibly newer
	st.Must("POST", "/bo/tags", `{"id":"a","name":"a2","categoryId":"c"}`, 201)
	var d docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "New", "url": "https://y.org", "tagsIds": []string{"a"}}, 201).JSON(t, &d)
	st.StartNATS()
	Eventually(t, 30*time.Second, "the old a leaves the old document", func() bool { return publicTags(st, old) == "b" })
	time.Sleep(500 * time.Millisecond)
	if got := publicTags(st, d.ID); got != "a" {
		t.Errorf("the document tagged with the new a has %q: the old tag's deletion took it", got)
	}
}
