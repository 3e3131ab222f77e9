// Package periodic runs a background job every interval until its context
// ends: sweeps and other catch-up work that several replicas may run at
// once (the job must be idempotent). A failing job is logged once per
// outage, and its recovery once.
package periodic

import (
	"context"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Start runs job every interval (with Jitter), each run bounded by
// interval, until ctx ends or stop is called; stop ends it and waits for a running job. name
// says what the job does, in the log.
func Start(ctx context.Context, log *slog.Logger, name string, interval time.Duration, job func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait := startWaits(interval)
		failing := false
		for {
			if !sleep(ctx, wait()) {
				return
			}
			jctx, cancel := context.WithTimeout(ctx, interval)
			err := job(jctx)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil && !failing:
				failing = true
				log.Warn(name+" failed; retried every interval", "error", err, "interval", interval)
			case err != nil:
				log.Debug(name+" still failing", "error", err)
			case failing:
				failing = false
				log.Info(name + " recovered")
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// Until runs job at once, then again after 1 s, 2 s, 4 s … (each with
// Jitter, 10 s at most) while it fails, each run bounded by 10 s, until a run succeeds: start-up
// work that must not hold up serving (a bucket to make, streams to ensure
// while the dependency is down). The first failure is logged, and so is the
// success after it. done is closed when a run has succeeded; stop ends the
// retries and waits for a run under way.
func Until(ctx context.Context, log *slog.Logger, name string, job func(context.Context) error) (done <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	succeeded := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		wait := untilWaits()
		for failures := 0; ; failures++ {
			jctx, jcancel := context.WithTimeout(ctx, 10*time.Second)
			err := job(jctx)
			jcancel()
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				if failures > 0 {
					log.Info(name+" done", "attempts", failures+1)
				}
				close(succeeded)
				return
			}
			if failures == 0 {
				log.Warn(name+" failed; retried in the background", "error", err)
			} else {
				log.Debug(name+" still failing", "error", err)
			}
			if !sleep(ctx, wait()) {
				return
			}
		}
	}()
	return succeeded, func() {
		cancel()
		<-finished
	}
}

// Jitter spreads every wait of Start, Until and NewBackoff: a wait of d is
// drawn from [d-20%, d+20%], so replicas started together, or failing
// together in one outage, do not run or retry at the same instants.
const Jitter = 0.2

// NewBackoff returns waits that start at first and double, each drawn
// with Jitter, none longer than max (github.com/cenkalti/backoff/v5's
// ExponentialBackOff; it caps the step, not the drawn wait, so the step
// stops at max/(1+Jitter)). Call Reset after a success. Not safe for
// concurrent use.
func NewBackoff(first, max time.Duration) *backoff.ExponentialBackOff {
	top := time.Duration(float64(max) / (1 + Jitter))
	b := &backoff.ExponentialBackOff{
		InitialInterval: min(first, top), RandomizationFactor: Jitter, Multiplier: 2, MaxInterval: top,
	}
	b.Reset()
	return b
}

// untilMaxWait is the longest wait between two runs of Until's job.
const untilMaxWait = 10 * time.Second

// startWaits returns Start's waits: interval, with Jitter.
func startWaits(interval time.Duration) func() time.Duration {
	b := &backoff.ExponentialBackOff{InitialInterval: interval, RandomizationFactor: Jitter, Multiplier: 1, MaxInterval: interval}
	b.Reset()
	return b.NextBackOff
}

// untilWaits returns Until's waits: 1 s, 2 s, 4 s … 10 s at most, with
// Jitter.
func untilWaits() func() time.Duration {
	return NewBackoff(time.Second, untilMaxWait).NextBackOff
}

// sleep waits d, or less if ctx ends first; it reports whether ctx is
// still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
