package outbox

import (
	"log/slog"
	"testing"
	"time"
)

// Two replicas whose publishing failed at the same moment (NATS went
// down) must not retry at the same instants: each wait is drawn with
// jitter, so their schedules part at once, and every wait stays within
// ±20 % of the doubling step, never over MaxBackoff.
func TestTwoReplicasRetryAtDifferentInstants(t *testing.T) {
	cfg := RelayConfig{Interval: time.Second, MaxBackoff: 30 * time.Second}
	a := NewRelay(nil, slog.New(slog.DiscardHandler), cfg)
	b := NewRelay(nil, slog.New(slog.DiscardHandler), cfg)
	var atA, atB time.Duration
	differ := 0
	step := cfg.Interval
	for failures := 1; failures <= 10; failures++ {
		wa, wb := a.backoff(failures), b.backoff(failures)
		for _, w := range []time.Duration{wa, wb} {
			if w < step*8/10 || w > step*12/10+time.Millisecond || w > cfg.MaxBackoff {
				t.Errorf("retry %d: wait %v, want within ±20%% of %v and at most %v", failures, w, step, cfg.MaxBackoff)
			}
		}
		atA, atB = atA+wa, atB+wb
		if (atA - atB).Abs() > 10*time.Millisecond {
			differ++
		}
		step = min(2*step, time.Duration(float64(cfg.MaxBackoff)/1.2))
	}
	if differ < 8 {
		t.Errorf("the two replicas retried within 10 ms of each other at %d of 10 retries, want at most 2 (jitter)", 10-differ)
	}
}
