// Package periodic runs a background job every interval until its context
// ends: sweeps and other catch-up work that several replicas may run at
// once (the job must be idempotent). A failing job is logged once per
// outage, and its recovery once.
package periodic

import (
	"context"
	"log/slog"
	"time"
)

// Start runs job every interval, each run bounded by interval, until ctx
// ends or stop is called; stop ends it and waits for a running job. name
// says what the job does, in the log.
func Start(ctx context.Context, log *slog.Logger, name string, interval time.Duration, job func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		failing := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
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

// Until runs job at once, then again after 1 s, 2 s, 4 s … (10 s at most)
// while it fails, each run bounded by 10 s, until a run succeeds: start-up
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
		wait := time.Second
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
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 10*time.Second)
		}
	}()
	return succeeded, func() {
		cancel()
		<-finished
	}
}
