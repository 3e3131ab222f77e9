package delivery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/webhook/internal/delivery"
	dstore "github.com/doclib/services/webhook/internal/delivery/mongostore"
	"github.com/doclib/services/webhook/internal/destination"
	"github.com/doclib/services/webhook/internal/keyring"
	"github.com/doclib/services/webhook/internal/signature"
	"github.com/doclib/services/webhook/internal/subscription"
	sstore "github.com/doclib/services/webhook/internal/subscription/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func loopbackSender() *delivery.Sender {
	return delivery.NewSender(destination.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}))
}

// Issue 26: a receiver that never answers (each attempt waits for the 10 s
// timeout) delays no other subscription: every event reaches the healthy
// receiver, in order, within a few seconds, while the other's first
// attempt still hangs.
func TestAHangingReceiverDelaysNoOther(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	db := testkit.Mongo(t)
	keys, err := keyring.New("an-isolation-test-key-of-32-bytes-or-more")
	if err != nil {
		t.Fatal(err)
	}
	subStore, dl := sstore.New(db, keys), dstore.New(db, time.Hour)
	subs := subscription.NewService(subStore, subscription.Rules{AllowHTTP: true}, time.Hour, slog.New(slog.DiscardHandler))
	testkit.Must(t, dl.EnsureIndexes(ctx), "indexes")

	var mu sync.Mutex
	var got []string
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("webhook-id"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer healthy.Close()
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-hang }))
	defer hanging.Close()

	for _, s := range []struct{ id, url string }{{"wh_hang", hanging.URL}, {"wh_ok", healthy.URL}} {
		testkit.Must(t, subStore.Create(ctx, subscription.Subscription{ID: s.id, URL: s.url, EventTypes: []string{"*"},
			Status: subscription.Active, Secret: signature.NewSecret(), CreatedAt: time.Now()}), "create subscription")
	}
	d := delivery.NewDispatcher(dl, subs, loopbackSender(), delivery.Config{
		Retry: delivery.Retry{Initial: time.Second, Max: time.Minute, Window: time.Hour},
		Owner: "test", Poll: 200 * time.Millisecond, Lease: time.Minute}, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	defer close(hang) // first: the hanging attempt ends, the dispatcher stops, the servers close

	q := delivery.NewQueue(dl, subs, d.Nudge)
	const n = 20
	start := time.Now()
	var want []string
	for i := range n {
		data, _ := json.Marshal(events.TagDeletedData{TagID: fmt.Sprint(i), CategoryID: "c"})
		e := events.Envelope{ID: fmt.Sprintf("ev%02d", i), Type: events.TagDeleted, Time: time.Now(), Data: data, Sequence: uint64(i + 1)}
		testkit.Must(t, q.Handle(ctx, e), "handle")
		want = append(want, "msg_"+e.ID)
	}
	for time.Since(start) < 5*time.Second {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the healthy receiver got %d events in %v", len(got), time.Since(start).Round(time.Millisecond))
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after %v the healthy receiver got %d of %d events (%v), want all, in order, while the other hangs",
			time.Since(start).Round(time.Millisecond), len(got), n, got)
	}
}

// Issue 26: a receiver answering 30 MB costs the sender no more than the
// small cap it reads: the attempt ends at once and the receiver cannot
// write the rest.
func TestAThirtyMegabyteAnswerIsReadUpToTheCap(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var written int
	body := make([]byte, 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(30<<20))
		w.WriteHeader(http.StatusOK)
		for range (30 << 20) / len(body) {
			n, err := w.Write(body)
			mu.Lock()
			written += n
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	start := time.Now()
	a := loopbackSender().Send(context.Background(), delivery.Message{URL: srv.URL, ID: "msg_1", Body: []byte(`{}`),
		Secrets: []string{signature.NewSecret()}}, time.Now())
	took := time.Since(start)
	if a.StatusCode != http.StatusOK || a.Error != "" {
		t.Errorf("attempt %+v, want a success (200)", a)
	}
	if took > 2*time.Second {
		t.Errorf("the attempt took %v, want it to stop reading at the cap", took)
	}
	srv.CloseClientConnections()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if written >= 30<<20 {
		t.Errorf("the receiver wrote all %d bytes: the sender read the whole answer", written)
	}
	t.Logf("the receiver could write %d KiB of its 30 MiB answer (socket buffers) before the sender closed", written>>10)
}
