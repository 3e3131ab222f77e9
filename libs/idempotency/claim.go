package idempotency

import (
	"context"
	"sync/atomic"
	"time"
)

// Claim is the key a request runs under, for a handler whose write must
// carry it: a create stores it with what it creates, so that a retry
// finds what a first attempt made even when that attempt's outcome never
// reached the service (its database answered too late).
type Claim struct {
	// ID is the caller's scoped key (ScopedID).
	ID string
	// Fingerprint identifies the request (method, path, body).
	Fingerprint string
	// ExpiresAt is when the key is forgotten: past it, a stored key must
	// no longer stand in the way of a new request.
	ExpiresAt time.Time
	forgotten atomic.Bool
	taken     atomic.Bool
}

// Forget says the answer is not the key's outcome (the key was used for
// another request, found by the handler): the key is let go instead of
// keeping that answer, so a retry of the first request still gets its
// outcome.
func (c *Claim) Forget() { c.forgotten.Store(true) }

// Forget lets the key of the request ctx belongs to go instead of keeping
// its answer (Claim.Forget); nothing for a request holding no claim.
func Forget(ctx context.Context) {
	if c, ok := ClaimFrom(ctx); ok {
		c.Forget()
	}
}

type claimKey struct{}

// WithClaim returns ctx carrying c.
func WithClaim(ctx context.Context, c *Claim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// ClaimFrom returns the claim of the request ctx belongs to: set for a
// request that holds its key and whose body was read before the handler
// ran (not an upload, whose fingerprint is known only at its end).
func ClaimFrom(ctx context.Context) (*Claim, bool) {
	c, ok := ctx.Value(claimKey{}).(*Claim)
	return c, ok
}

// TakeClaim returns the claim of the request ctx belongs to, as
// ClaimFrom, to the first write that stores it only: a request that
// creates several records ties its key to one, not to all of them (the
// retry would find the first and answer it for every one).
func TakeClaim(ctx context.Context) (*Claim, bool) {
	c, ok := ClaimFrom(ctx)
	if !ok || !c.taken.CompareAndSwap(false, true) {
		return nil, false
	}
	return c, true
}
