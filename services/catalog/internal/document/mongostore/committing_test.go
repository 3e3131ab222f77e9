package mongostore

import (
	"context"
	"testing"
	"time"
)

// A commit outlives its caller's context, and keeps a later deadline the
// caller had (an event handler's batch of many documents).
func TestCommittingOutlivesItsCaller(t *testing.T) {
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ctx, stop := committing(gone)
	defer stop()
	if ctx.Err() != nil {
		t.Errorf("a commit's context ended with its caller's: %v", ctx.Err())
	}
	for _, c := range []struct {
		caller time.Duration
		want   time.Duration
	}{{time.Second, cleanupTimeout}, {time.Hour, time.Hour}} {
		caller, cancel := context.WithTimeout(context.Background(), c.caller)
		ctx, stop := committing(caller)
		d, ok := ctx.Deadline()
		if left := time.Until(d); !ok || left > c.want || left < c.want-time.Minute/2 {
			t.Errorf("caller's deadline in %v: the commit's in %v, want about %v", c.caller, left, c.want)
		}
		stop()
		cancel()
	}
}
