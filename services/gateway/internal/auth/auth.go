// Package auth owns the authentication and the roles of the back-office:
// bearer tokens, either one of the configured static API tokens (each with
// a name and a role) or, when an OIDC issuer is configured, a JWT signed by
// that issuer (name from sub, role from a configured claim); a viewer may
// only read; a client that keeps failing to authenticate gets 429 for its
// failures (a valid token is always served).
package auth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/problem"
	"github.com/doclib/libs/ratelimit"
)

// Verifier turns a bearer token into the caller it names.
type Verifier interface {
	// Verify returns the caller token names, or an error: ErrNotMine when
	// the token is not of this verifier's kind (the next one is asked),
	// an *Invalid (401), a *NoRole (403) or an *Unavailable (503).
	Verify(ctx context.Context, token string) (identity.Caller, error)
}

// ErrNotMine says a verifier does not know the token; another may.
var ErrNotMine = errors.New("not a token of this kind")

// Invalid is a token that does not authenticate anyone: 401.
type Invalid struct{ Reason string }

func (e *Invalid) Error() string { return e.Reason }

// NoRole is a token that authenticates someone who has no role on /bo
// (a JWT without a usable role claim): 403.
type NoRole struct{ Reason string }

func (e *NoRole) Error() string { return e.Reason }

// Unavailable is a token that cannot be checked now (the identity
// provider has not been reached yet): 503 with Retry-After. It counts as
// no failed authentication.
type Unavailable struct {
	Reason     string
	RetryAfter time.Duration
}

func (e *Unavailable) Error() string { return e.Reason }

// ErrNoVerifier is returned by New without any verifier: /bo must never be
// open.
var ErrNoVerifier = errors.New("no way to authenticate /bo is configured")

// Authenticator decides who a /bo request comes from and whether that
// caller may do it.
type Authenticator struct {
	verifiers []Verifier
	failures  *ratelimit.Limiter
}

// New returns an Authenticator asking verifiers in order. failures, when
// not nil, counts failed authentications per client: once a client's
// bucket is empty, its failed /bo authentications are 429 until it
// refills. That throttles the noise, not the guessing: the token is
// always checked first, so a right guess is served even past the budget;
// against guessing, tokens are long and random (BO_API_TOKENS). It is checked first
// (in constant time for static tokens): a valid token takes nothing from
// the bucket and is served whatever the bucket holds, so a flood of wrong
// tokens from an address (a NAT, an office, an attacker sharing it) never
// locks out the right one.
func New(failures *ratelimit.Limiter, verifiers ...Verifier) (*Authenticator, error) {
	if len(verifiers) == 0 {
		return nil, ErrNoVerifier
	}
	return &Authenticator{verifiers: verifiers, failures: failures}, nil
}

// Authenticate returns the caller of c's request, or the problem to answer
// with (401, 403 or 429). safe says the route changes nothing (a read, or
// a safe POST such as the document preview): a viewer may send it. Tokens
// are never logged or echoed.
func (a *Authenticator) Authenticate(c *gin.Context, safe bool) (identity.Caller, *problem.Problem) {
	caller, p := a.verify(c.Request.Context(), c.Request.Header.Values("Authorization"))
	if p != nil {
		return identity.Caller{}, a.throttle(c, p)
	}
	if !mayDo(caller.Role, safe) {
		return identity.Caller{}, problem.Forbidden(
			"the role " + string(caller.Role) + " may only read (GET, HEAD); " + c.Request.Method + " needs the role editor")
	}
	return caller, nil
}

// throttle counts a failed authentication, a 401 for a request that sent
// credentials (one without is no guess), against its client; once the
// client's budget is spent, the failure is 429 instead.
func (a *Authenticator) throttle(c *gin.Context, p *problem.Problem) *problem.Problem {
	if p.Status != http.StatusUnauthorized || a.failures == nil || c.GetHeader("Authorization") == "" {
		return p
	}
	if ok, wait := a.failures.Allow(ratelimit.ClientKey(c.ClientIP())); !ok {
		return tooManyFailures(wait)
	}
	return p
}

func (a *Authenticator) verify(ctx context.Context, headers []string) (identity.Caller, *problem.Problem) {
	switch {
	case len(headers) == 0:
		return identity.Caller{}, problem.Unauthorized("a bearer token is required (Authorization: Bearer <token>)")
	case len(headers) > 1:
		return identity.Caller{}, problem.Unauthorized("the Authorization header is given more than once")
	}
	token, err := bearer(headers[0])
	if err != nil {
		return identity.Caller{}, problem.Unauthorized(err.Error())
	}
	for _, v := range a.verifiers {
		caller, err := v.Verify(ctx, token)
		var invalid *Invalid
		var noRole *NoRole
		var unavailable *Unavailable
		switch {
		case err == nil:
			return caller, nil
		case errors.Is(err, ErrNotMine):
			continue
		case errors.As(err, &invalid):
			return identity.Caller{}, problem.Unauthorized(invalid.Reason)
		case errors.As(err, &noRole):
			return identity.Caller{}, problem.Forbidden(noRole.Reason)
		case errors.As(err, &unavailable):
			return identity.Caller{}, problem.Unavailable(unavailable.Reason).
				With("Retry-After", strconv.Itoa(int(unavailable.RetryAfter/time.Second)))
		default:
			return identity.Caller{}, problem.Unauthorized("the bearer token is not valid")
		}
	}
	return identity.Caller{}, problem.Unauthorized("the bearer token is not valid")
}

// mayDo reports whether role may send a request on /bo (CONTRACT.md §5):
// a viewer only those that change nothing.
func mayDo(role identity.Role, safe bool) bool {
	switch role {
	case identity.Editor:
		return true
	case identity.Viewer:
		return safe
	default:
		return false
	}
}

func tooManyFailures(wait time.Duration) *problem.Problem {
	return problem.New(http.StatusTooManyRequests, "rate_limited",
		"too many failed authentications from this client; try again later").
		With("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(wait)))
}
