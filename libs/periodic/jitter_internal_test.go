package periodic

import (
	"testing"
	"time"
)

// Replicas started together (a deployment, or all of them seeing the same
// outage) must not run or retry a job at the same instants: the waits of
// Start (a constant interval) and of Until (growing) are drawn with jitter,
// so two schedules part at once, and each wait stays within its bounds.
func TestTwoReplicasRunAtDifferentInstants(t *testing.T) {
	cases := []struct {
		name     string
		waits    func() func() time.Duration
		min, max func(i int) time.Duration
	}{
		{"Start every 1s", func() func() time.Duration { return startWaits(time.Second) },
			func(int) time.Duration { return 800 * time.Millisecond },
			func(int) time.Duration { return 1200 * time.Millisecond }},
		{"Until", untilWaits,
			func(i int) time.Duration { return min(time.Second<<i, untilMaxWait*10/12) * 8 / 10 },
			func(int) time.Duration { return untilMaxWait }},
	}
	for _, c := range cases {
		a, b := c.waits(), c.waits()
		var atA, atB time.Duration
		differ := 0
		for i := range 10 {
			wa, wb := a(), b()
			for _, w := range []time.Duration{wa, wb} {
				if w < c.min(i) || w > c.max(i) {
					t.Errorf("%s: wait %d is %v, want within [%v, %v]", c.name, i, w, c.min(i), c.max(i))
				}
			}
			atA, atB = atA+wa, atB+wb
			if (atA - atB).Abs() > 10*time.Millisecond {
				differ++
			}
		}
		if differ < 8 {
			t.Errorf("%s: two replicas ran within 10 ms of each other at %d of 10 runs, want at most 2 (jitter)", c.name, 10-differ)
		}
	}
}
