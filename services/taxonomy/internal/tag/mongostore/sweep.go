package mongostore

import (
	"context"
	"log/slog"
	"time"

	"github.com/doclib/libs/periodic"
)

// SweepEvery is how often StartSweeping runs Sweep.
const SweepEvery = keySweepEvery

// StartSweeping runs Sweep every interval (with periodic's jitter) until
// ctx ends or stop is called. The relay runs Sweep only after it has
// published something: a tombstone kept for its Idempotency-Key, and the
// expired keys, would otherwise stay until the next deletion or restart.
// As the catalog's stale-hold job, it is idempotent across replicas.
func (s *Store) StartSweeping(ctx context.Context, log *slog.Logger, interval time.Duration) (stop func()) {
	return periodic.Start(ctx, log, "sweeping tombstones and expired idempotency keys", interval, s.Sweep)
}
