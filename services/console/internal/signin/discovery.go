package signin

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// ProviderTimeout bounds each call to the provider (discovery, keys,
// token): a provider that hangs is an outage said in seconds.
const ProviderTimeout = 10 * time.Second

// failureKept is how long a failed discovery is answered again without
// asking the provider: a flood of sign-ins during an outage does not
// become a flood of calls to it.
const failureKept = 5 * time.Second

// discovery reads the provider's discovery document once it answers: one
// call at a time, which no request waits for longer than its own context
// allows, and whose failure is kept a few seconds.
type discovery struct {
	fetch func(context.Context) (*discovered, error)
	now   func() time.Time

	mu        sync.Mutex
	found     *discovered
	err       error     // the last failure
	failUntil time.Time // err is answered until then
	running   chan struct{}
}

// get returns the document, asking the provider when it is not known and
// no failure is kept.
func (d *discovery) get(ctx context.Context) (*discovered, error) {
	for {
		d.mu.Lock()
		if d.found != nil || d.now().Before(d.failUntil) {
			found, err := d.found, d.err
			d.mu.Unlock()
			return found, err
		}
		if d.running == nil {
			d.running = make(chan struct{})
			go d.run(d.running)
		}
		running := d.running
		d.mu.Unlock()
		select {
		case <-running:
		case <-ctx.Done():
			return nil, &Unavailable{Err: ctx.Err()}
		}
	}
}

// run asks the provider under its own deadline (no request's: a request
// that gives up does not fail the others waiting) and records the answer.
func (d *discovery) run(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), ProviderTimeout)
	defer cancel()
	found, err := d.fetch(ctx)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.found, d.err = found, err
	if err != nil {
		d.failUntil = d.now().Add(failureKept)
	}
	d.running = nil
	close(done)
}

// known is the document when it was read, else nil; it asks nobody.
func (d *discovery) known() *discovered {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.found
}

// DiscoverInBackground reads the provider's discovery document now, so
// that a provider misconfigured or down is in the log at start-up, not
// at the first sign-in.
func (p *Provider) DiscoverInBackground(log *slog.Logger) {
	go func() {
		if _, err := p.disc.get(context.Background()); err != nil {
			log.Warn("identity provider not discovered at start-up; sign-ins will try again", "issuer", p.cfg.Issuer, "err", err)
			return
		}
		log.Info("identity provider discovered", "issuer", p.cfg.Issuer)
	}()
}
