// Package identity carries who made a back-office request, from the
// gateway (which authenticates it) to the service that records it
// (createdBy, updatedBy, deletedBy). How the gateway proves the identity to
// the services lives beside the code that makes and checks that proof; this
// package is only the vocabulary and the request-context plumbing.
package identity

import "context"

// Role is what a caller may do on /bo/**.
type Role string

// The two roles (CONTRACT.md §5).
const (
	// Viewer may GET and HEAD.
	Viewer Role = "viewer"
	// Editor may do everything.
	Editor Role = "editor"
)

// Valid reports whether r is one of the two roles.
func (r Role) Valid() bool { return r == Viewer || r == Editor }

// Caller is an authenticated back-office user or machine.
type Caller struct {
	Name string
	Role Role
}

type key struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c Caller) context.Context { return context.WithValue(ctx, key{}, c) }

// From returns the caller ctx carries, if any.
func From(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(key{}).(Caller)
	return c, ok
}

// Name returns the name of the caller ctx carries, or "" (a background
// task, an event handler, a test).
func Name(ctx context.Context) string {
	c, _ := From(ctx)
	return c.Name
}
