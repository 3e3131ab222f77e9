// Package subscription owns webhook subscriptions: where events are sent
// (a URL), which events (type patterns, see eventtype), whether they are
// sent (active, paused, or disabled by the delivery with a reason), and
// the signing secret with its rotation. The Store it needs is declared
// here; mongostore implements it.
package subscription

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/doclib/libs/validation"
	"github.com/doclib/services/webhook/internal/destination"
	"github.com/doclib/services/webhook/internal/eventtype"
)

// Status says whether events are sent to a subscription.
type Status string

const (
	// Active subscriptions receive every event they ask for.
	Active Status = "active"
	// Paused subscriptions receive nothing; events meanwhile are not kept
	// for them.
	Paused Status = "paused"
	// Disabled is Paused set by the delivery (410 Gone, or failures for
	// the whole retry window), with the reason in DisabledReason.
	Disabled Status = "disabled"
)

// Sentinel errors.
var (
	ErrNotFound = errors.New("subscription not found")
	ErrConflict = errors.New("subscription changed concurrently")
)

// Subscription is one receiver of events.
type Subscription struct {
	ID             string
	URL            string
	EventTypes     []string
	Description    string
	Status         Status
	DisabledReason string
	Secret         string
	// PreviousSecret still signs until PreviousUntil, after a rotation.
	PreviousSecret string
	PreviousUntil  time.Time
	// SecretError says why a stored secret does not open (altered, or
	// sealed with a key this deployment does not hold), "" when both do.
	// Such a subscription is listed and shown, marked; nothing is signed
	// for it (its attempts fail, saying so) until its secret is rotated.
	SecretError string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CreatedBy   string
	UpdatedBy   string
}

// Wants reports whether events of type name are sent to s.
func (s Subscription) Wants(name string) bool {
	if s.Status != Active {
		return false
	}
	for _, p := range s.EventTypes {
		if eventtype.Match(p, name) {
			return true
		}
	}
	return false
}

// Secrets returns the secrets that sign at now: the current one, and the
// previous one during a rotation.
func (s Subscription) Secrets(now time.Time) []string {
	if s.PreviousSecret != "" && now.Before(s.PreviousUntil) {
		return []string{s.Secret, s.PreviousSecret}
	}
	return []string{s.Secret}
}

// Store keeps subscriptions.
type Store interface {
	Create(ctx context.Context, s Subscription) error
	Get(ctx context.Context, id string) (Subscription, error)
	List(ctx context.Context) ([]Subscription, error)
	// Update applies change to the stored subscription and stores the
	// result, unless change fails; ErrConflict when it changed meanwhile.
	Update(ctx context.Context, id string, change func(*Subscription) error) (Subscription, error)
	Delete(ctx context.Context, id string) error
}

// Rules are the deployment's settings that decide what a URL may be.
type Rules struct {
	// AllowHTTP accepts plain http URLs (development), not only https.
	AllowHTTP bool
	// Guard refuses URLs whose host is a literal address it would not
	// connect to (names are checked when connecting).
	Guard *destination.Guard
}

// Limits on the input.
const (
	maxURL         = 2048
	maxDescription = 500
	maxEventTypes  = 50
)

// Changes are the fields of a create or an update; nil leaves a field as
// it is (an update) or takes its default (a create).
type Changes struct {
	URL         *string
	EventTypes  *[]string
	Description *string
	Status      *Status
}

// apply validates c, collecting every failing field, and writes it to s.
func (r Rules) apply(s *Subscription, c Changes) error {
	var errs validation.Errors
	if c.URL != nil {
		u, why := r.checkURL(*c.URL)
		if why != "" {
			errs.Add("url", "%s", why)
		}
		s.URL = u
	}
	if c.EventTypes != nil {
		checkTypes(&errs, *c.EventTypes)
		s.EventTypes = dedupe(*c.EventTypes)
	}
	if c.Description != nil {
		d := validation.Trim(*c.Description)
		if why := validation.UnsafeText(d); why != "" {
			errs.Add("description", "%s", why)
		} else if utf8.RuneCountInString(d) > maxDescription {
			errs.Add("description", "must be at most %d characters", maxDescription)
		}
		s.Description = d
	}
	if c.Status != nil {
		switch *c.Status {
		case Active:
			s.Status, s.DisabledReason = Active, ""
		case Paused:
			s.Status, s.DisabledReason = Paused, ""
		default:
			errs.Add("status", "must be active or paused")
		}
	}
	return errs.Err()
}

func (r Rules) checkURL(raw string) (string, string) {
	if len(raw) > maxURL {
		return "", "must be at most 2048 bytes"
	}
	norm, why := validation.HTTPURL(raw)
	if why != "" {
		return "", why
	}
	u, err := url.Parse(norm)
	if err != nil {
		return "", "is not a URL"
	}
	if u.Scheme != "https" && !r.AllowHTTP {
		return "", "must be an https URL"
	}
	if u.Fragment != "" {
		return "", "must have no fragment"
	}
	if ip, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && r.Guard != nil {
		if err := r.Guard.Check(ip); err != nil {
			return "", "is refused: " + strings.TrimPrefix(err.Error(), destination.ErrRefused.Error()+": ")
		}
	}
	return norm, ""
}

func checkTypes(errs *validation.Errors, types []string) {
	switch {
	case len(types) == 0:
		errs.Add("eventTypes", "must name at least one event type")
	case len(types) > maxEventTypes:
		errs.Add("eventTypes", "must name at most %d event types", maxEventTypes)
	}
	for i, t := range types {
		if !eventtype.ValidPattern(t) {
			errs.Add("eventTypes["+strconv.Itoa(i)+"]", "%q is not an event type (see the API reference for the list; a prefix ends in .*)", t)
		}
	}
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := make([]string, 0, len(in))
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
