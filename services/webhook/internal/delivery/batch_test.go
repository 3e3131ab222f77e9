package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/services/webhook/internal/destination"
	"github.com/doclib/services/webhook/internal/signature"
	"github.com/doclib/services/webhook/internal/subscription"
)

// memStore is an in-memory queue that counts its round trips.
type memStore struct {
	Store // the methods the dispatcher does not call
	mu    sync.Mutex
	ds    []Delivery // in sequence order
	reads int
	saves int
}

func (m *memStore) Due(_ context.Context, sub string, limit int) ([]Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	var out []Delivery
	for _, d := range m.ds {
		if d.SubscriptionID == sub && d.Status == Pending && len(out) < limit {
			out = append(out, d)
		}
	}
	return out, nil
}

func (m *memStore) SaveAll(_ context.Context, ds []Delivery) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.saves++
	for _, d := range ds {
		i := slices.IndexFunc(m.ds, func(x Delivery) bool { return x.EventID == d.EventID })
		m.ds[i] = d
	}
	return nil
}

func (m *memStore) Acquire(context.Context, string, string, time.Time) (bool, error) {
	return true, nil
}
func (m *memStore) Release(context.Context, string, string) error  { return nil }
func (m *memStore) Backlog(context.Context, string) (int64, error) { return 0, nil }

type oneSub struct{ s subscription.Subscription }

func (o oneSub) Get(context.Context, string) (subscription.Subscription, error) { return o.s, nil }
func (o oneSub) List(context.Context) ([]subscription.Subscription, error) {
	return []subscription.Subscription{o.s}, nil
}
func (o oneSub) Disable(context.Context, string, string) error { return nil }

// A healthy receiver gets its deliveries back-to-back, a batch per queue
// read and store write rather than a round trip per delivery; an attempt
// that fails stops its batch, so what follows waits for its retry (order
// per subscription).
func TestBatchesKeepOrderAndSaveRoundTrips(t *testing.T) {
	t.Parallel()
	const n = 250
	var mu sync.Mutex
	var got []string
	failed := false
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r.Header.Get("webhook-id"))
		if r.Header.Get("webhook-id") == "msg_e5" && !failed {
			failed = true
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()

	st := &memStore{}
	var want []string
	now := time.Now()
	for i := range n {
		st.ds = append(st.ds, Delivery{SubscriptionID: "wh_1", EventID: fmt.Sprint("e", i), Sequence: uint64(i + 1),
			Body: []byte(`{}`), Status: Pending, NextAttemptAt: now, EventTime: now, CreatedAt: now})
		want = append(want, fmt.Sprint("msg_e", i))
		if i == 5 {
			want = append(want, "msg_e5")
		}
	}
	subs := oneSub{subscription.Subscription{ID: "wh_1", URL: rcv.URL, EventTypes: []string{"*"},
		Status: subscription.Active, Secret: signature.NewSecret()}}
	sender := NewSender(destination.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}))
	d := NewDispatcher(st, subs, sender, Config{Retry: Retry{Initial: 50 * time.Millisecond, Max: 100 * time.Millisecond,
		Window: time.Hour}, Owner: "p1", Poll: 50 * time.Millisecond, Lease: 25 * time.Second},
		slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		k := len(got)
		mu.Unlock()
		if k >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("received %d requests, want %d in order (e5 twice): first differences at %v", len(got), len(want),
			firstDiff(got, want))
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.saves > n/10 || st.reads > n/5 {
		t.Errorf("%d attempts took %d queue reads and %d writes, want batches", n+1, st.reads, st.saves)
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A subscription whose secret does not open gets nothing sent unsigned:
// each attempt fails, saying why in the delivery log, and is retried (a
// rotation of the secret lets the next one through).
func TestAnUnreadableSecretFailsTheAttemptsVisibly(t *testing.T) {
	t.Parallel()
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a delivery was sent without its secret (%s)", r.Header.Get("webhook-signature"))
	}))
	defer rcv.Close()
	now := time.Now()
	st := &memStore{ds: []Delivery{{SubscriptionID: "wh_1", EventID: "e1", Sequence: 1, Body: []byte(`{}`),
		Status: Pending, NextAttemptAt: now, EventTime: now, CreatedAt: now}}}
	subs := oneSub{subscription.Subscription{ID: "wh_1", URL: rcv.URL, EventTypes: []string{"*"}, Status: subscription.Active,
		SecretError: "the signing secret does not open: altered, or moved from another record"}}
	sender := NewSender(destination.NewGuard([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}))
	d := NewDispatcher(st, subs, sender, Config{Retry: Retry{Initial: time.Hour, Max: time.Hour, Window: 24 * time.Hour},
		Owner: "p1", Poll: 20 * time.Millisecond, Lease: 25 * time.Second}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		st.mu.Lock()
		dl := st.ds[0]
		st.mu.Unlock()
		if dl.AttemptCount == 0 {
			continue
		}
		if dl.Status != Pending || len(dl.Attempts) != 1 || !strings.Contains(dl.Attempts[0].Error, "rotate") {
			t.Fatalf("after an attempt: %s with attempts %+v, want pending, its attempt failed saying the secret must be rotated", dl.Status, dl.Attempts)
		}
		return
	}
	t.Fatal("no attempt was recorded: the delivery waits silently")
}
