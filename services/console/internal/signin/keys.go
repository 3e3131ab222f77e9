package signin

import (
	"context"
	"errors"

	"github.com/coreos/go-oidc/v3/oidc"
)

// keySet is the provider's keys (JWKS), telling a failure to fetch them
// (the provider is down: 503, try later) from a token they do not verify
// (401): go-oidc's verifier words both as one error.
type keySet struct{ remote *oidc.RemoteKeySet }

// keysFailedKey is the context key of the *error a failed fetch of the
// keys is written to.
type keysFailedKey struct{}

func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.remote.VerifySignature(ctx, jwt)
	// RemoteKeySet wraps (%w) only the errors of fetching the keys; "no
	// key verifies it" is a plain error.
	if err != nil && errors.Unwrap(err) != nil {
		if slot, ok := ctx.Value(keysFailedKey{}).(*error); ok {
			*slot = err
		}
	}
	return payload, err
}
