package mongostore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/webhook/internal/delivery"
	"github.com/doclib/services/webhook/internal/delivery/mongostore"
)

func TestMain(m *testing.M) {
	// The development database's TTL monitor runs every 60 s, as MongoDB's;
	// sooner here so that expiry is quick to test.
	if os.Getenv("DEV_DATABASE_TTL_INTERVAL") == "" {
		_ = os.Setenv("DEV_DATABASE_TTL_INTERVAL", "1s")
	}
	testkit.Main(m)
}

// A finished delivery leaves the log once its retention is over (the TTL
// index); a pending one stays.
func TestFinishedDeliveriesExpire(t *testing.T) {
	if os.Getenv("TEST_MONGODB_URI") != "" {
		t.Skip("MongoDB's TTL monitor runs every 60 s")
	}
	ctx := context.Background()
	st := mongostore.New(testkit.Mongo(t), time.Millisecond)
	testkit.Must(t, st.EnsureIndexes(ctx), "indexes")
	now := time.Now().UTC()
	d := func(event string, status delivery.Status, done time.Time) delivery.Delivery {
		return delivery.Delivery{SubscriptionID: "wh_1", EventID: event, Type: "tag.deleted", Sequence: 1,
			Body: []byte(`{}`), Status: status, NextAttemptAt: now, EventTime: now, CreatedAt: now, DoneAt: done}
	}
	testkit.Must(t, st.Enqueue(ctx, []delivery.Delivery{d("done", delivery.Succeeded, now.Add(-time.Hour)),
		d("pending", delivery.Pending, time.Time{})}), "enqueue")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		log, err := st.Log(ctx, "wh_1", 10)
		testkit.Must(t, err, "log")
		if len(log) == 1 && log[0].EventID == "pending" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %+v after 30 s, want only the pending delivery", log)
		}
	}
}

// The queue on the real database: a redelivered event queues nothing
// twice, Due follows the stream order, SaveAll stores a batch, a retry makes a finished delivery
// pending again, and one owner at a time holds a queue's lease.
func TestQueueAndLease(t *testing.T) {
	ctx := context.Background()
	st := mongostore.New(testkit.Mongo(t), time.Hour)
	testkit.Must(t, st.EnsureIndexes(ctx), "indexes")
	testkit.Must(t, st.EnsureIndexes(ctx), "indexes again")
	now := time.Now().UTC()
	d := func(event string, seq uint64) delivery.Delivery {
		return delivery.Delivery{SubscriptionID: "wh_1", EventID: event, Type: "tag.deleted", Sequence: seq,
			Body: []byte(`{}`), Status: delivery.Pending, NextAttemptAt: now, EventTime: now, CreatedAt: now}
	}
	testkit.Must(t, st.Enqueue(ctx, []delivery.Delivery{d("b", 2), d("a", 1)}), "enqueue")
	testkit.Must(t, st.Enqueue(ctx, []delivery.Delivery{d("a", 1), d("c", 3)}), "enqueue a redelivered event")
	if n, err := st.Backlog(ctx, "wh_1"); err != nil || n != 3 {
		t.Fatalf("backlog %d, %v; want 3", n, err)
	}
	due, err := st.Due(ctx, "wh_1", 2)
	if err != nil || len(due) != 2 || due[0].EventID != "a" || due[1].EventID != "b" {
		t.Fatalf("Due = %+v %v, want events a, b (lowest sequences)", due, err)
	}
	first := due[0]
	first.Status, first.DoneAt = delivery.Succeeded, now
	first.AttemptCount, first.Attempts = 1, []delivery.Attempt{{At: now, StatusCode: 204, Latency: 3 * time.Millisecond}}
	gone := d("gone", 9) // never queued (its subscription dropped): not stored again
	testkit.Must(t, st.SaveAll(ctx, []delivery.Delivery{first, gone}), "save all")
	if next, _ := st.Due(ctx, "wh_1", 10); len(next) != 2 || next[0].EventID != "b" {
		t.Errorf("after a: %+v, want b, c", next)
	}
	testkit.Must(t, st.Retry(ctx, "wh_1", "a", now), "retry")
	if next, _ := st.Due(ctx, "wh_1", 1); len(next) != 1 || next[0].EventID != "a" || next[0].AttemptCount != 1 {
		t.Errorf("after the retry: %+v, want a again with its attempt kept", next)
	}
	if err := st.Retry(ctx, "wh_1", "nope", now); err != delivery.ErrNotFound {
		t.Errorf("retry of an unknown delivery: %v", err)
	}
	log, err := st.Log(ctx, "wh_1", 10)
	if err != nil || len(log) != 3 {
		t.Fatalf("log %d, %v", len(log), err)
	}

	until := time.Now().Add(time.Minute)
	for _, c := range []struct {
		owner string
		want  bool
	}{{"p1", true}, {"p1", true}, {"p2", false}} {
		got, err := st.Acquire(ctx, "wh_1", c.owner, until)
		if err != nil || got != c.want {
			t.Errorf("Acquire by %s = %v, %v; want %v", c.owner, got, err, c.want)
		}
	}
	testkit.Must(t, st.Release(ctx, "wh_1", "p1"), "release")
	if got, err := st.Acquire(ctx, "wh_1", "p2", until); err != nil || !got {
		t.Errorf("Acquire after the release = %v, %v", got, err)
	}
	if got, _ := st.Acquire(ctx, "wh_1", "p3", time.Now().Add(-time.Second)); got {
		t.Error("p3 took a lease p2 holds")
	}
	testkit.Must(t, st.Drop(ctx, "wh_1"), "drop")
	if n, _ := st.Backlog(ctx, "wh_1"); n != 0 {
		t.Errorf("backlog %d after Drop", n)
	}
}
