package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/oidckeys"
)

// OIDC accepts JWTs signed by an issuer's keys (fetched from its JWKS and
// cached), carrying the configured audience, not expired. The caller's name
// is the token's sub; its role comes from a configured claim.
//
// The issuer is discovered after start-up (Discover, retried in the
// background until it succeeds), so a gateway that starts while the
// identity provider is down serves its public routes and static tokens at
// once instead of refusing to start. Until then a JWT is answered 503 with
// Retry-After (an *Unavailable), not 401: the token may well be valid, and
// a 401 would tell a back-office to throw it away and send its user to log
// in again, at the provider that is down, and would count against the
// client's failed-authentication budget (429 once the provider is back).
// So is a JWT whose keys cannot be fetched (a new key id, or a signature
// the cached keys do not verify, while the JWKS endpoint fails): the
// keys are libs/oidckeys', which tells that failure from a bad token.
type OIDC struct {
	issuer    string
	audience  string
	roleClaim []string                             // a path into the claims: "roles", or "realm_access.roles"
	verifier  atomic.Pointer[oidc.IDTokenVerifier] // nil until the issuer is discovered
}

// DiscoveryRetry is the longest wait between two attempts at discovering
// the issuer (periodic.Until's), and so the Retry-After of a JWT sent
// before it succeeded, or while the issuer's keys cannot be fetched.
const DiscoveryRetry = 10 * time.Second

// NewOIDC returns a verifier of issuer's JWTs; it contacts nobody (see
// Discover). roleClaim names the claim holding the role, a string or an
// array of strings; dots walk into nested objects (Keycloak's
// "realm_access.roles").
func NewOIDC(issuer, audience, roleClaim string) *OIDC {
	return &OIDC{issuer: issuer, audience: audience, roleClaim: strings.Split(roleClaim, ".")}
}

// Discover reads the issuer's configuration (its discovery document); from
// then on JWTs are verified. It fails while the issuer cannot be reached
// or answers with another issuer's document: run it until it succeeds.
func (o *OIDC) Discover(ctx context.Context) error {
	if o.verifier.Load() != nil {
		return nil
	}
	p, err := oidc.NewProvider(ctx, o.issuer)
	if err != nil {
		return fmt.Errorf("discover OIDC issuer %s: %w", config.Redact(o.issuer), err)
	}
	var doc struct {
		JWKS string `json:"jwks_uri"`
	}
	_ = p.Claims(&doc) // the document parsed already (jwks_uri is required there)
	keys := oidckeys.New(nil, doc.JWKS)
	o.verifier.Store(oidc.NewVerifier(o.issuer, keys, &oidc.Config{ClientID: o.audience}))
	return nil
}

// Verify checks token's signature, issuer, audience and expiry, then reads
// the caller from it.
func (o *OIDC) Verify(ctx context.Context, token string) (identity.Caller, error) {
	if !looksLikeJWT(token) {
		return identity.Caller{}, ErrNotMine
	}
	verifier := o.verifier.Load()
	if verifier == nil {
		return identity.Caller{}, &Unavailable{
			Reason:     "the identity provider (OIDC issuer) has not been reached yet, so bearer JWTs cannot be checked; try again shortly",
			RetryAfter: DiscoveryRetry,
		}
	}
	vctx, keysFailed := oidckeys.Watch(ctx)
	tok, err := verifier.Verify(vctx, token)
	if err != nil {
		if keysFailed() != nil { // the token may well be valid: see OIDC
			return identity.Caller{}, &Unavailable{
				Reason:     "the identity provider's keys (JWKS) could not be fetched, so bearer JWTs cannot be checked; try again shortly",
				RetryAfter: DiscoveryRetry,
			}
		}
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			return identity.Caller{}, &Invalid{Reason: "the bearer token has expired"}
		}
		if strings.Contains(err.Error(), "audience") {
			return identity.Caller{}, &Invalid{Reason: "the bearer token is not meant for this API (audience)"}
		}
		return identity.Caller{}, &Invalid{Reason: "the bearer token is not valid"}
	}
	if tok.Subject == "" {
		return identity.Caller{}, &Invalid{Reason: "the bearer token names no subject (sub)"}
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return identity.Caller{}, &Invalid{Reason: "the bearer token's claims are not a JSON object"}
	}
	role, err := o.role(claims)
	if err != nil {
		return identity.Caller{}, err
	}
	return identity.Caller{Name: tok.Subject, Role: role}, nil
}

// role reads the role claim: "editor" or "viewer", or an array holding
// either (editor wins). Other values are ignored, so an issuer may list
// roles of other applications beside ours.
func (o *OIDC) role(claims map[string]any) (identity.Role, error) {
	name := strings.Join(o.roleClaim, ".")
	var v any = claims
	for _, k := range o.roleClaim {
		m, ok := v.(map[string]any)
		if !ok {
			v = nil
			break
		}
		v = m[k]
	}
	var values []string
	switch x := v.(type) {
	case nil:
		return "", &NoRole{Reason: "the bearer token has no " + name + " claim, so no role on /bo"}
	case string:
		values = []string{x}
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return "", &NoRole{Reason: "the " + name + " claim of the bearer token must be a string or an array of strings"}
			}
			values = append(values, s)
		}
	default:
		return "", &NoRole{Reason: "the " + name + " claim of the bearer token must be a string or an array of strings"}
	}
	role := identity.Role("")
	for _, s := range values {
		switch identity.Role(s) {
		case identity.Editor:
			role = identity.Editor
		case identity.Viewer:
			if role == "" {
				role = identity.Viewer
			}
		}
	}
	if role == "" {
		return "", &NoRole{Reason: "the " + name + " claim of the bearer token names neither editor nor viewer"}
	}
	return role, nil
}
