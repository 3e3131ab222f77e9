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
	seen := st.tagDeletions(len(want))
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

// tagDeletions counts the tag.deleted events of the LIBRARY stream per
// tag, waiting until at least want tags have one, then a few seconds more
// for any duplicate.
func (st *Stack) tagDeletions(want int) map[string]int {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	nc, js, err := events.Connect(ctx, "nats://"+st.natsAt, "e2e-count", testkit.Logger(st.t))
	testkit.Must(st.t, err, "connect to NATS")
	defer nc.Close()
	c, err := js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.TagDeleted}})
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
				st.t.Fatalf("%d tags with a tag.deleted event in the stream, want %d", len(seen), want)
			}
			return seen
		}
		testkit.Must(st.t, err, "next tag.deleted event")
		var e struct {
			Data struct {
				TagID string `json:"tagId"`
			} `json:"data"`
		}
		testkit.Must(st.t, json.Unmarshal(msg.Data(), &e), "event")
		seen[e.Data.TagID]++
	}
}
