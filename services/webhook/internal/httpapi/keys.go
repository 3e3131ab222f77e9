package httpapi

import (
	"log/slog"
	"time"

	"github.com/doclib/libs/idempotency"
	"github.com/doclib/services/webhook/internal/keyring"
)

// KeysConfig is how the webhook keeps the answers of POSTs sent with an
// Idempotency-Key (libs/idempotency): a create's answer shows the new
// signing secret, so with a keyring (WEBHOOK_SECRET_KEY) kept answers are
// sealed with it, as the secrets themselves are.
func KeysConfig(retention time.Duration, ring *keyring.Keyring, log *slog.Logger) idempotency.KeysConfig {
	cfg := idempotency.KeysConfig{Retention: retention, Log: log}
	if ring != nil { // a nil keyring in the interface would not be nil
		cfg.Sealer = ring
	}
	return cfg
}
