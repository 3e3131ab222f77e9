package outbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/outbox"
)

// OUTBOX_POLL_INTERVAL=0 used to be taken as the default (1 s) without a
// word; below 10 ms a relay would poll without pause. Both are refused at
// start-up, naming the variable.
func TestLoadRelayConfigRefusesAZeroOrTinyPollInterval(t *testing.T) {
	for _, v := range []string{"0", "0s", "1ms"} {
		env := config.FromMap(map[string]string{"OUTBOX_POLL_INTERVAL": v})
		outbox.LoadRelayConfig(env)
		err := env.Err()
		if err == nil || !strings.Contains(err.Error(), "OUTBOX_POLL_INTERVAL") {
			t.Errorf("OUTBOX_POLL_INTERVAL=%s: error %v, want one naming the variable", v, err)
		}
	}
	for v, want := range map[string]time.Duration{"": time.Second, "10ms": 10 * time.Millisecond, "1m": time.Minute} {
		env := config.FromMap(map[string]string{"OUTBOX_POLL_INTERVAL": v})
		cfg := outbox.LoadRelayConfig(env)
		if err := env.Err(); err != nil || cfg.Interval != want {
			t.Errorf("OUTBOX_POLL_INTERVAL=%q: interval %v, error %v; want %v and no error", v, cfg.Interval, err, want)
		}
	}
}
