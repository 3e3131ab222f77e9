package subscription

import (
	"context"
	"errors"
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
}

// NewService returns a Service; grace is the rotation's overlap.
func NewService(store Store, rules Rules, grace time.Duration) *Service {
	return &Service{store: store, rules: rules, grace: grace, now: time.Now}
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
	return s.store.Get(ctx, id)
}

// List returns every subscription.
func (s *Service) List(ctx context.Context) ([]Subscription, error) { return s.store.List(ctx) }

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
