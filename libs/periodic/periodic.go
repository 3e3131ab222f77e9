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
