package subscription

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/validation"
	"github.com/doclib/services/webhook/internal/signature"
)

// Service holds the subscription use cases.
type Service struct {
	store Store
	rules Rules
	// grace is how long the previous secret still signs after a rotation.
	grace time.Duration
	now   func() time.Time
	log   *slog.Logger
	// warned holds the unreadable secrets logged (id and SecretError).
	warned sync.Map
}

// NewService returns a Service; grace is the rotation's overlap.
func NewService(store Store, rules Rules, grace time.Duration, log *slog.Logger) *Service {
	return &Service{store: store, rules: rules, grace: grace, now: time.Now, log: log}
}

// Create stores a new subscription with a fresh secret; the returned
// subscription is the only time its secret is shown.
func (s *Service) Create(ctx context.Context, c Changes) (Subscription, error) {
	var errs validation.Errors
	if c.URL == nil {
		errs.Add("url", "is required")
	}
	if c.EventTypes == nil {
		errs.Add("eventTypes", "is required")
	}
	if c.Status == nil {
		active := Active
		c.Status = &active
	}
	now := s.now().UTC()
	sub := Subscription{ID: "wh_" + events.NewID(), Secret: signature.NewSecret(), CreatedAt: now, UpdatedAt: now,
		CreatedBy: identity.Name(ctx), UpdatedBy: identity.Name(ctx)}
	if err := s.rules.apply(&sub, c); err != nil {
		var verrs validation.Errors
		errors.As(err, &verrs)
		errs = append(errs, verrs...)
	}
	if err := errs.Err(); err != nil {
		return Subscription{}, err
	}
	return sub, s.store.Create(ctx, sub)
}

// Get returns one subscription.
func (s *Service) Get(ctx context.Context, id string) (Subscription, error) {
	sub, err := s.store.Get(ctx, id)
	if err == nil {
		s.warnUnreadable(ctx, sub)
	}
	return sub, err
}

// List returns every subscription, those whose secret does not open
// included (marked).
func (s *Service) List(ctx context.Context) ([]Subscription, error) {
	subs, err := s.store.List(ctx)
	if err == nil {
		s.warnUnreadable(ctx, subs...)
	}
	return subs, err
}

// warnUnreadable logs, once per subscription and reason, a secret that
// does not open.
func (s *Service) warnUnreadable(ctx context.Context, subs ...Subscription) {
	for _, sub := range subs {
		if sub.SecretError == "" {
			continue
		}
		if _, seen := s.warned.LoadOrStore(sub.ID+"\x00"+sub.SecretError, true); !seen {
			s.log.WarnContext(ctx, "webhook subscription's signing secret does not open: nothing is sent to it until the secret is rotated",
				"subscription", sub.ID, "reason", sub.SecretError)
		}
	}
}

// Update changes the given fields.
func (s *Service) Update(ctx context.Context, id string, c Changes) (Subscription, error) {
	return s.store.Update(ctx, id, func(sub *Subscription) error {
		if err := s.rules.apply(sub, c); err != nil {
			return err
		}
		sub.UpdatedAt, sub.UpdatedBy = s.now().UTC(), identity.Name(ctx)
		return nil
	})
}

// Delete removes a subscription.
func (s *Service) Delete(ctx context.Context, id string) error { return s.store.Delete(ctx, id) }

// Rotate gives the subscription a new secret; the current one keeps
// signing (a second signature) for the grace period.
func (s *Service) Rotate(ctx context.Context, id string) (Subscription, error) {
	return s.store.Update(ctx, id, func(sub *Subscription) error {
		now := s.now().UTC()
		sub.PreviousSecret, sub.PreviousUntil = sub.Secret, now.Add(s.grace)
		sub.Secret = signature.NewSecret()
		sub.SecretError = "" // a secret that did not open is replaced
		sub.UpdatedAt, sub.UpdatedBy = now, identity.Name(ctx)
		return nil
	})
}

// Disable stops deliveries to a subscription and records why.
func (s *Service) Disable(ctx context.Context, id, reason string) error {
	_, err := s.store.Update(ctx, id, func(sub *Subscription) error {
		sub.Status, sub.DisabledReason, sub.UpdatedAt = Disabled, reason, s.now().UTC()
		return nil
	})
	return err
}
