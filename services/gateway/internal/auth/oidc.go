package auth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/identity"
)

// OIDC accepts JWTs signed by an issuer's keys (fetched from its JWKS and
// cached), carrying the configured audience, not expired. The caller's name
// is the token's sub; its role comes from a configured claim.
type OIDC struct {
	verifier  *oidc.IDTokenVerifier
	roleClaim []string // a path into the claims: "roles", or "realm_access.roles"
}

// NewOIDC discovers issuer's configuration. It fails when the issuer cannot
// be reached, so a misconfigured gateway does not start. roleClaim names
// the claim holding the role, a string or an array of strings; dots walk
// into nested objects (Keycloak's "realm_access.roles").
func NewOIDC(ctx context.Context, issuer, audience, roleClaim string) (*OIDC, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("discover OIDC issuer %s: %w", config.Redact(issuer), err)
	}
	return &OIDC{verifier: p.Verifier(&oidc.Config{ClientID: audience}), roleClaim: strings.Split(roleClaim, ".")}, nil
}

// Verify checks token's signature, issuer, audience and expiry, then reads
// the caller from it.
func (o *OIDC) Verify(ctx context.Context, token string) (identity.Caller, error) {
	if !looksLikeJWT(token) {
		return identity.Caller{}, ErrNotMine
	}
	tok, err := o.verifier.Verify(ctx, token)
	if err != nil {
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
