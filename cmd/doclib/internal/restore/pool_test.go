package restore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestPoolBoundsJobsAndReturnsTheFirstError(t *testing.T) {
	p := newPool(context.Background(), 3)
	var running, peak atomic.Int32
	for range 20 {
		p.goRun(func(ctx context.Context) error {
			n := running.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(5 * time.Millisecond)
			running.Add(-1)
			return nil
		})
	}
	if err := p.wait(); err != nil {
		t.Fatal(err)
	}
	if got := peak.Load(); got > 3 || got < 2 {
		t.Fatalf("peak %d jobs at once, want at most 3 (and some concurrency)", got)
	}

	boom := errors.New("boom")
	p = newPool(context.Background(), 2)
	p.goRun(func(ctx context.Context) error { return boom })
	p.goRun(func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	for p.goRun(func(ctx context.Context) error { return nil }) {
		time.Sleep(time.Millisecond) // until the failure stops the pool
	}
	if err := p.wait(); !errors.Is(err, boom) {
		t.Fatalf("wait: %v, want the first error", err)
	}
}
