// Package oidckeys is an OpenID Connect provider's signing keys (its JWKS)
// that tells a failure to fetch them (the provider is down, or a key
// rotation could not be read: try later, 503) from a token they do not
// verify (401): go-oidc's verifier words both as one error.
package oidckeys

import (
	"context"
	"errors"
	"net/http"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Set is the provider's keys, fetched from jwksURL and cached by go-oidc;
// give it to oidc.NewVerifier.
type Set struct{ remote *oidc.RemoteKeySet }

// New returns the keys at jwksURL, fetched with client (nil: the default
// client). The fetches run under each verification's context; this one
// only carries the client.
func New(client *http.Client, jwksURL string) *Set {
	ctx := context.Background()
	if client != nil {
		ctx = oidc.ClientContext(ctx, client)
	}
	return &Set{remote: oidc.NewRemoteKeySet(ctx, jwksURL)}
}

// failedKey is the context key of the *error a failed fetch is written to.
type failedKey struct{}

// VerifySignature implements oidc.KeySet; a failed fetch of the keys is
// also recorded in the context Watch returned.
func (s *Set) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := s.remote.VerifySignature(ctx, jwt)
	// RemoteKeySet wraps (%w) only the errors of fetching the keys; "no
	// key verifies it" is a plain error.
	if err != nil && errors.Unwrap(err) != nil {
		if slot, ok := ctx.Value(failedKey{}).(*error); ok {
			*slot = err
		}
	}
	return payload, err
}

// Watch returns a context to verify a token under, and a function that
// tells, once the verification returned, whether it failed because the
// keys could not be fetched (nil when they were, or were not needed).
func Watch(ctx context.Context) (context.Context, func() error) {
	var failed error
	return context.WithValue(ctx, failedKey{}, &failed), func() error { return failed }
}
