package signin

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestDiscovery: a request waits for a hanging provider no longer than
// its own context; a failure is answered again for failureKept without
// asking the provider; then it is asked again.
func TestDiscovery(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	release := make(chan struct{})
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	d := &discovery{now: func() time.Time { return *clock.Load() },
		fetch: func(context.Context) (*discovered, error) {
			calls.Add(1)
			<-release
			return nil, &Unavailable{Err: errors.New("connection refused")}
		}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	var down *Unavailable
	if _, err := d.get(ctx); !errors.As(err, &down) || time.Since(began) > 2*time.Second {
		t.Fatalf("a hanging provider: %v after %v, want Unavailable when the request's context ends", err, time.Since(began))
	}
	close(release)
	for i := 0; i < 3; i++ {
		if _, err := d.get(context.Background()); !errors.As(err, &down) {
			t.Fatalf("get %d: %v, want Unavailable", i, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the provider was asked %d times within %v of a failure, want once", n, failureKept)
	}
	later := now.Add(failureKept)
	clock.Store(&later)
	_, _ = d.get(context.Background())
	if n := calls.Load(); n != 2 {
		t.Errorf("after %v the provider was asked %d times in all, want 2", failureKept, n)
	}
}
