package outbox_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
)

// diesAfterPublishing publishes, then never comes back to the relay (as a
// process killed between JetStream's acknowledgement and the removal of
// the entry): the entry stays in the record.
type diesAfterPublishing struct {
	outbox.Publisher
	once      sync.Once
	published chan struct{}
}

func (p *diesAfterPublishing) Publish(ctx context.Context, m events.Message) error {
	if err := p.Publisher.Publish(ctx, m); err != nil {
		return err
	}
	p.once.Do(func() { close(p.published) })
	<-ctx.Done()
	return ctx.Err()
}

// TestRelayCrashedAfterPublishing: the README's row "a relay crashes after
// publishing, before removing the entry". The next relay (another replica,
// or the same one restarted) publishes the entry again; JetStream drops
// the duplicate, so the stream holds the event once, and the entry goes.
func TestRelayCrashedAfterPublishing(t *testing.T) {
	t.Parallel()
	coll := collectionNamed(t, "crashed")
	url := testkit.NATS(t).ClientURL()
	evs := addEvents(t, context.Background(), coll, "d", 1)

	dying := &diesAfterPublishing{Publisher: events.NewPublisher(connect(t, url), testkit.Logger(t)), published: make(chan struct{})}
	stopDying := run(t, outbox.NewRelay(dying, testkit.Logger(t), outbox.RelayConfig{
		Interval: time.Hour, PublishTimeout: 200 * time.Millisecond,
	}, coll))
	select {
	case <-dying.published:
	case <-time.After(10 * time.Second):
		t.Fatal("the first relay did not publish")
	}
	stopDying()
	js := connect(t, url)
	if ids := streamMsgIDs(t, js); len(ids) != 1 || ids[0] != evs[0].ID {
		t.Fatalf("stream after the first relay died: %v, want the event once", ids)
	}
	if p := pendingOf(t, coll)["d"]; p.entries != 1 || p.count != 1 {
		t.Fatalf("entry after the first relay died: %+v, want it still there", p)
	}

	next := &countingPublisher{Publisher: events.NewPublisher(js, testkit.Logger(t))}
	run(t, outbox.NewRelay(next, testkit.Logger(t), outbox.RelayConfig{Interval: 20 * time.Millisecond}, coll))
	waitFor(t, 10*time.Second, "the next relay removes the entry", func() bool { return allPublished(t, coll) })
	if next.calls.Load() == 0 {
		t.Error("the next relay removed the entry without publishing it")
	}
	if ids := streamMsgIDs(t, js); len(ids) != 1 {
		t.Errorf("stream after the event was published again: %v, want it once (the duplicate dropped)", ids)
	}
}
