package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
)

// TestATaxonomyKilledMidDeletionLeavesNothingHalfWritten: with NATS down,
// so that the outbox fills, tags are deleted (each answered 204), then a
// category of 30 tags is deleted while the taxonomy is killed. After the
// restart the category is there with all its tags, or gone with all of
// them (one transaction); once NATS is back, every acknowledged deletion's
// event is in the stream exactly once, and the category's tags' too if it
// went.
func TestATaxonomyKilledMidDeletionLeavesNothingHalfWritten(t *testing.T) {
	st := NewStack(t, nil)
	st.StopNATS()
	acked := st.deleteTags("acked", 5)
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "big", "name": "Big"}, 201)
	for i := range 30 {
		id := fmt.Sprintf("big-t%d", i)
		st.Must("POST", "/bo/tags", map[string]string{"id": id, "name": "Tag " + id, "categoryId": "big"}, 201)
	}
	proc := st.procs["taxonomy"]
	answered := make(chan Response, 1)
	go func() { answered <- st.BO("DELETE", "/bo/tags-categories/big", nil) }()
	time.Sleep(20 * time.Millisecond)
	testkit.Must(t, syscall.Kill(proc.Pid(), syscall.SIGKILL), "kill taxonomy")
	<-proc.Done()
	r := <-answered
	st.Start("taxonomy")

	var cats []struct {
		ID   string `json:"id"`
		Tags []struct {
			ID string `json:"id"`
		} `json:"tags"`
	}
	st.Must("GET", "/bo/tags-categories", nil, 200).JSON(t, &cats)
	var big []string
	present := false
	for _, c := range cats {
		if c.ID == "big" {
			present = true
			for _, tg := range c.Tags {
				big = append(big, tg.ID)
			}
		}
	}
	switch {
	case present && len(big) != 30:
		t.Fatalf("the category survived with %d of its 30 tags: half-written", len(big))
	case present && r.Status == 204:
		t.Fatalf("the deletion was answered 204 but the category is there")
	case !present:
		t.Logf("the deletion committed before the kill (answered %d)", r.Status)
	default:
		t.Logf("the deletion did not commit (answered %d)", r.Status)
	}

	want := acked
	if !present {
		for i := range 30 {
			want = append(want, fmt.Sprintf("big-t%d", i))
		}
	}
	st.StartNATS()
	seen := st.eventsPer(events.TagDeleted, "tagId", len(want))
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("tag %s: %d tag.deleted events in the stream, want 1", id, seen[id])
		}
	}
	if present {
		for id, n := range seen {
			if strings.HasPrefix(id, "big-") {
				t.Errorf("tag %s was not deleted, yet %d events say it was", id, n)
			}
		}
	}
}

// eventsPer counts the events of subject in the LIBRARY stream per value
// of their data's field, waiting until at least want values have one,
// then a few seconds more for any duplicate.
func (st *Stack) eventsPer(subject, field string, want int) map[string]int {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nc, js, err := events.Connect(ctx, "nats://"+st.natsAt, "e2e-count", testkit.Logger(st.t))
	testkit.Must(st.t, err, "connect to NATS")
	defer nc.Close()
	c, err := js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	testkit.Must(st.t, err, "ordered consumer")
	seen := map[string]int{}
	for {
		wait := 60 * time.Second
		if len(seen) >= want {
			wait = 3 * time.Second
		}
		msg, err := c.Next(jetstream.FetchMaxWait(wait))
		// An ordered consumer's Next says "nats: timeout" when the wait ends.
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, context.DeadlineExceeded) {
			if len(seen) < want {
				st.t.Fatalf("%d values of %s with a %s event in the stream, want %d", len(seen), field, subject, want)
			}
			return seen
		}
		testkit.Must(st.t, err, "next "+subject+" event")
		var e struct {
			Data map[string]any `json:"data"`
		}
		testkit.Must(st.t, json.Unmarshal(msg.Data(), &e), "event")
		seen[fmt.Sprint(e.Data[field])]++
	}
}

// TestACatalogKilledMidCreateLosesNothing: with NATS down, so that the
// outbox fills, documents are created (each answered 201), then a keyed
// create is cut short by killing the catalog. After the restart a retry
// with the same Idempotency-Key answers the document the first attempt
// made, or makes it: there is exactly one. Once NATS is back, every
// created document has exactly one document.created event.
func TestACatalogKilledMidCreateLosesNothing(t *testing.T) {
	st := NewStack(t, nil)
	st.StopNATS()
	link := func(title string) map[string]any {
		return map[string]any{"type": "LINK", "title": title, "url": "https://example.org/" + title, "tagsIds": []string{}}
	}
	var want []string
	for i := range 5 {
		var d struct {
			ID string `json:"id"`
		}
		st.Must("POST", "/bo/documents", link(fmt.Sprint("acked-", i)), 201).JSON(t, &d)
		want = append(want, d.ID)
	}
	proc := st.procs["catalog"]
	answered := make(chan Response, 1)
	go func() { answered <- st.BO("POST", "/bo/documents", link("cut"), "Idempotency-Key", "cut-1") }()
	time.Sleep(20 * time.Millisecond)
	testkit.Must(t, syscall.Kill(proc.Pid(), syscall.SIGKILL), "kill the catalog")
	<-proc.Done()
	t.Logf("the create cut short answered %d", (<-answered).Status)
	st.Start("catalog")

	var made struct {
		ID string `json:"id"`
	}
	r := st.BO("POST", "/bo/documents", link("cut"), "Idempotency-Key", "cut-1")
	if r.Status != 201 {
		t.Fatalf("the retry answered %d %s, want 201", r.Status, r.Body)
	}
	r.JSON(t, &made)
	var all []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &all)
	var cut []string
	for _, d := range all {
		if d.Title == "cut" {
			cut = append(cut, d.ID)
		}
	}
	if len(cut) != 1 || cut[0] != made.ID {
		t.Fatalf("documents titled cut: %v, want exactly the retry's %s", cut, made.ID)
	}
	want = append(want, made.ID)
	st.StartNATS()
	seen := st.eventsPer(events.DocumentCreated, "documentId", len(want))
	for _, id := range want {
		if seen[id] != 1 {
			t.Errorf("document %s: %d document.created events in the stream, want 1", id, seen[id])
		}
	}
}
