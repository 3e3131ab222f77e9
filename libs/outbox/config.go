package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/events"
)

// Publisher sends one event and returns nil once the stream holds it
// (including when the stream already had it). *events.Publisher is one.
type Publisher interface {
	Publish(ctx context.Context, m events.Message) error
}

// RelayConfig tunes an outbox's relay. Zero values take the defaults.
type RelayConfig struct {
	// Interval between polls when nothing happens (default 1s).
	Interval time.Duration
	// MaxBackoff caps the wait between attempts while NATS or MongoDB is
	// failing; it starts at Interval and doubles, each wait with ±20 %
	// jitter (default 30s).
	MaxBackoff time.Duration
	// BatchSize is how many documents one query reads (default 100).
	BatchSize int
	// PublishTimeout bounds one publish (default 5s): while NATS is
	// unreachable, a publish waits this long before the pass gives up.
	PublishTimeout time.Duration
}

// MinPollInterval is the shortest OUTBOX_POLL_INTERVAL: below it a relay
// would poll its collections without pause.
const MinPollInterval = 10 * time.Millisecond

// LoadRelayConfig reads the relay's setting from the environment:
// OUTBOX_POLL_INTERVAL, how often a relay looks for entries when no write
// of its own replica nudged it (entries left by a replica that crashed
// before publishing; the default, 1 s, keeps their events within about a
// second). On MongoDB a look is one index probe; on the development
// database it reads the whole collection (bench/results/database.md).
// Below MinPollInterval, 0 included, is a start-up error: 0 used to mean
// the default without a word, and there is no "never" (the relay is what
// publishes a crashed replica's events).
func LoadRelayConfig(env *config.Env) RelayConfig {
	const key = "OUTBOX_POLL_INTERVAL"
	d := env.Duration(key, time.Second)
	if d < MinPollInterval {
		env.Check(key, fmt.Errorf("%s is below the least interval, %s (a relay polling more often would never pause; 0 is not \"never\")", d, MinPollInterval))
	}
	return RelayConfig{Interval: d}
}

func (c RelayConfig) withDefaults() RelayConfig {
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.MaxBackoff < c.Interval {
		c.MaxBackoff = c.Interval
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.PublishTimeout <= 0 {
		c.PublishTimeout = 5 * time.Second
	}
	return c
}
