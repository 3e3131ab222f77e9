// Package shutdown runs the clean-up steps of a service's graceful shutdown,
// each within a bounded time.
package shutdown

import (
	"context"
	"log/slog"
	"time"
)

// Timeout bounds one clean-up step.
const Timeout = 5 * time.Second

// Do runs fn (a Shutdown, Disconnect or Stop method) with Timeout and logs
// a failure as what.
func Do(log *slog.Logger, what string, fn func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := fn(ctx); err != nil {
		log.Warn(what+" did not stop cleanly", "error", err)
	}
}
