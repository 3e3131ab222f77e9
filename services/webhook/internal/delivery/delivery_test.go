package delivery

import (
	"strings"
	"testing"
	"time"
)

func TestRecord(t *testing.T) {
	t.Parallel()
	r := Retry{Initial: time.Second, Max: time.Minute, Window: time.Hour}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	d := Delivery{Status: Pending}
	if out := r.record(&d, Attempt{StatusCode: 500, Error: "HTTP 500"}, t0); out.Disable != "" || d.Status != Pending {
		t.Fatalf("a first failure: %+v, status %s; want pending, retried", out, d.Status)
	}
	if wait := d.NextAttemptAt.Sub(t0); wait < 500*time.Millisecond || wait > 1500*time.Millisecond {
		t.Errorf("first retry in %v, want the initial interval ±50%%", wait)
	}
	if !d.FailingSince.Equal(t0) {
		t.Errorf("failing since %v, want %v", d.FailingSince, t0)
	}
	out := r.record(&d, Attempt{Error: "timed out"}, t0.Add(time.Hour))
	if d.Status != Failed || !strings.Contains(out.Disable, "every attempt failed for 1h0m0s") {
		t.Errorf("failing for the whole window: status %s, disable %q", d.Status, out.Disable)
	}

	gone := Delivery{Status: Pending}
	if out := r.record(&gone, Attempt{StatusCode: 410, Error: "HTTP 410"}, t0); gone.Status != Failed || !strings.Contains(out.Disable, "410 Gone") {
		t.Errorf("410: status %s, disable %q", gone.Status, out.Disable)
	}

	ok := Delivery{Status: Pending, FailingSince: t0}
	if out := r.record(&ok, Attempt{StatusCode: 204}, t0.Add(time.Minute)); ok.Status != Succeeded || out.Disable != "" || !ok.FailingSince.IsZero() {
		t.Errorf("2xx: status %s, disable %q", ok.Status, out.Disable)
	}
	redirect := Delivery{Status: Pending}
	if r.record(&redirect, Attempt{StatusCode: 302, Error: "redirect not followed"}, t0); redirect.Status != Pending {
		t.Errorf("a redirect must be a failed attempt, got %s", redirect.Status)
	}
}

func TestDelayGrowsAndStaysUnderMax(t *testing.T) {
	t.Parallel()
	r := Retry{Initial: time.Second, Max: 10 * time.Second, Window: time.Hour}
	for n := 1; n < 40; n++ {
		d := r.delay(n)
		if d <= 0 || d > 15*time.Second {
			t.Fatalf("delay(%d) = %v, want within (0, max+50%%]", n, d)
		}
	}
	if r.delay(8) < 5*time.Second {
		t.Errorf("delay(8) = %v, want near the max", r.delay(8))
	}
}

func TestKeepsTheLatestAttempts(t *testing.T) {
	t.Parallel()
	r := Retry{Initial: time.Second, Max: time.Second, Window: 24 * time.Hour}
	d := Delivery{Status: Pending}
	now := time.Now()
	for range 30 {
		r.record(&d, Attempt{Error: "x"}, now)
	}
	if d.AttemptCount != 30 || len(d.Attempts) != maxAttemptsKept {
		t.Errorf("attempts %d kept %d, want 30 and %d", d.AttemptCount, len(d.Attempts), maxAttemptsKept)
	}
}
