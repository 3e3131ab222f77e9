// Package delivery owns getting events to webhook subscriptions: one
// delivery record per event and subscription, queued in the store when the
// event is consumed; one worker per subscription that sends its deliveries
// in event order, signed (Standard Webhooks), retrying with exponential
// backoff and jitter for the retry window; and the delivery log. A slow or
// failing receiver holds up only its own queue.
package delivery

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Status of a delivery.
type Status string

const (
	// Pending deliveries wait in their subscription's queue.
	Pending Status = "pending"
	// Succeeded deliveries got a 2xx answer.
	Succeeded Status = "succeeded"
	// Failed deliveries were given up (410 Gone, the retry window passed,
	// or a failed test ping); a retry makes them Pending again.
	Failed Status = "failed"
)

// ErrNotFound is a delivery that is not in the log.
var ErrNotFound = errors.New("delivery not found")

// maxAttemptsKept bounds the attempts a delivery keeps in its log.
const maxAttemptsKept = 20

// Attempt is one try at sending a delivery.
type Attempt struct {
	At         time.Time
	StatusCode int // 0 when no answer came
	Latency    time.Duration
	Error      string
}

// Delivery is one event for one subscription.
type Delivery struct {
	SubscriptionID string
	EventID        string // also the webhook-id, kept by every retry
	Type           string
	Sequence       uint64 // the queue's order: the event's stream sequence
	Body           []byte // the JSON payload, fixed once queued
	TraceParent    string
	TraceState     string
	Status         Status
	AttemptCount   int
	Attempts       []Attempt // the latest maxAttemptsKept, oldest first
	NextAttemptAt  time.Time
	FailingSince   time.Time // first failure since the last success, zero if none
	EventTime      time.Time // when the event was published
	CreatedAt      time.Time
	DoneAt         time.Time // succeeded or failed
}

// WebhookID is the Standard Webhooks message id: the same for every
// attempt of this event.
func (d Delivery) WebhookID() string { return "msg_" + d.EventID }

// Store keeps the deliveries and the workers' leases.
type Store interface {
	// Enqueue stores deliveries that are not stored yet (same subscription
	// and event); those already there are left as they are.
	Enqueue(ctx context.Context, ds []Delivery) error
	// Due returns up to limit pending deliveries of sub, lowest sequence
	// first.
	Due(ctx context.Context, sub string, limit int) ([]Delivery, error)
	// Save replaces a delivery (its attempts, status, next attempt),
	// inserting it if needed (a test ping).
	Save(ctx context.Context, d Delivery) error
	// SaveAll replaces queued deliveries with one write; one no longer
	// stored (its subscription deleted) is not stored again.
	SaveAll(ctx context.Context, ds []Delivery) error
	// Log returns sub's deliveries, newest first.
	Log(ctx context.Context, sub string, limit int) ([]Delivery, error)
	// Retry makes a delivery pending again, due at once.
	Retry(ctx context.Context, sub, event string, now time.Time) error
	// Backlog counts sub's pending deliveries.
	Backlog(ctx context.Context, sub string) (int64, error)
	// Drop removes every delivery of sub.
	Drop(ctx context.Context, sub string) error
	// Acquire takes or renews the lease on sub's queue for owner until
	// until, and reports whether owner holds it.
	Acquire(ctx context.Context, sub, owner string, until time.Time) (bool, error)
	// Release gives the lease up.
	Release(ctx context.Context, sub, owner string) error
}

// Retry is the retry schedule.
type Retry struct {
	// Initial is the delay after the first failure, doubled after each
	// further one up to Max, with ±50% jitter.
	Initial, Max time.Duration
	// Window is how long a delivery may keep failing before the
	// subscription is disabled.
	Window time.Duration
}

// delay returns the wait before the next attempt after n failed ones. The
// schedule is backoff/v5's exponential backoff replayed n times, so it
// needs no state between attempts (which may be in another process).
func (r Retry) delay(n int) time.Duration {
	b := &backoff.ExponentialBackOff{
		InitialInterval: r.Initial, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: r.Max,
	}
	b.Reset()
	d := r.Initial
	for range min(n, 64) {
		d = b.NextBackOff()
	}
	if d <= 0 {
		d = time.Duration(float64(r.Initial) * (0.5 + rand.Float64()))
	}
	return d
}

// Outcome is what an attempt's result does to its delivery and
// subscription.
type Outcome struct {
	// Disable, when set, is why the subscription is to be disabled.
	Disable string
}

// record applies the result of an attempt at now to d.
func (r Retry) record(d *Delivery, a Attempt, now time.Time) Outcome {
	d.AttemptCount++
	d.Attempts = append(d.Attempts, a)
	if len(d.Attempts) > maxAttemptsKept {
		d.Attempts = d.Attempts[len(d.Attempts)-maxAttemptsKept:]
	}
	switch {
	case a.Error == "" && a.StatusCode >= 200 && a.StatusCode < 300:
		d.Status, d.DoneAt, d.FailingSince = Succeeded, now, time.Time{}
		return Outcome{}
	case a.StatusCode == 410:
		d.Status, d.DoneAt = Failed, now
		return Outcome{Disable: "the receiver answered 410 Gone at " + now.UTC().Format(time.RFC3339)}
	}
	if d.FailingSince.IsZero() {
		d.FailingSince = now
	}
	if now.Sub(d.FailingSince) >= r.Window {
		d.Status, d.DoneAt = Failed, now
		return Outcome{Disable: "every attempt failed for " + r.Window.String() + " since " +
			d.FailingSince.UTC().Format(time.RFC3339) + "; last: " + describe(a)}
	}
	d.NextAttemptAt = now.Add(r.delay(d.AttemptCount))
	return Outcome{}
}

func describe(a Attempt) string {
	if a.Error != "" {
		return a.Error
	}
	return "HTTP " + strconv.Itoa(a.StatusCode)
}
