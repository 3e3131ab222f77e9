package e2e

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/testkit"
)

// TestRestartedCatalogPicksUpEventsInFlight (issue 16 item 4): tag events
// that a catalog had received but not acknowledged when it was killed are
// applied promptly after its restart, not after a 30 s ack wait. The
// catalog is frozen (SIGSTOP) so that the events are delivered to it and
// held, then killed (SIGKILL) and started again.
func TestRestartedCatalogPicksUpEventsInFlight(t *testing.T) {
	st := NewStack(t, nil)
	doc := tagged(st, "c", "t1", "t2", "t3")

	nc, err := nats.Connect("nats://" + st.natsAt)
	testkit.Must(t, err, "connect to NATS")
	defer nc.Close()
	js, err := jetstream.New(nc)
	testkit.Must(t, err, "jetstream")
	held := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, "LIBRARY", "catalog-tag-deleted")
		testkit.Must(t, err, "consumer")
		info, err := c.Info(ctx)
		testkit.Must(t, err, "consumer info")
		return info.NumAckPending
	}

	catalog := st.procs["catalog"]
	testkit.Must(t, syscall.Kill(catalog.Pid(), syscall.SIGSTOP), "freeze catalog")
	st.Must("DELETE", "/bo/tags-categories/c", nil, 204)
	Eventually(t, 15*time.Second, "the three tag events delivered to the frozen catalog", func() bool { return held() == 3 })
	testkit.Must(t, syscall.Kill(catalog.Pid(), syscall.SIGKILL), "kill catalog")
	<-catalog.Done()

	st.Start("catalog")
	restarted := time.Now()
	Eventually(t, 20*time.Second, "the tags leave the document after the restart", func() bool { return publicTags(st, doc) == "" })
	if d := time.Since(restarted); d > 6*time.Second {
		t.Errorf("the events in flight were applied %s after the catalog's restart, want within seconds (its ack wait is 3 s)", d.Round(100*time.Millisecond))
	}
}
