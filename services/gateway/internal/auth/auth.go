// Package auth owns the authentication of the back-office: bearer tokens,
// either one of the configured static API tokens or, when an OIDC issuer is
// configured, a JWT signed by that issuer.
package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/problem"
)

// Verifier accepts or refuses a bearer token.
type Verifier interface {
	Verify(ctx context.Context, token string) bool
}

// Static accepts the configured static API tokens. It keeps only their
// SHA-256 sums, so the comparison time depends neither on the tokens'
// lengths nor on where a presented token first differs.
type Static struct {
	sums [][sha256.Size]byte
}

// NewStatic returns a verifier for tokens.
func NewStatic(tokens []string) *Static {
	s := &Static{sums: make([][sha256.Size]byte, len(tokens))}
	for i, t := range tokens {
		s.sums[i] = sha256.Sum256([]byte(t))
	}
	return s
}

// Verify compares token with every configured token, without stopping at
// the first match, so timing does not tell which one matched.
func (s *Static) Verify(_ context.Context, token string) bool {
	sum := sha256.Sum256([]byte(token))
	match := 0
	for i := range s.sums {
		match |= subtle.ConstantTimeCompare(sum[:], s.sums[i][:])
	}
	return match == 1
}

// OIDC accepts JWTs signed by an issuer's keys (fetched from its JWKS and
// cached), carrying the configured audience, not expired.
type OIDC struct {
	verifier *oidc.IDTokenVerifier
}

// NewOIDC discovers issuer's configuration. It fails when the issuer cannot
// be reached, so a misconfigured gateway does not start.
func NewOIDC(ctx context.Context, issuer, audience string) (*OIDC, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("discover OIDC issuer %s: %w", issuer, err)
	}
	return &OIDC{verifier: p.Verifier(&oidc.Config{ClientID: audience})}, nil
}

// Verify checks token's signature, issuer, audience and expiry.
func (o *OIDC) Verify(ctx context.Context, token string) bool {
	if strings.Count(token, ".") != 2 { // not a JWT: spare the parsing
		return false
	}
	_, err := o.verifier.Verify(ctx, token)
	return err == nil
}

// ErrNoVerifier is returned by Middleware without any verifier: /bo must
// never be open.
var ErrNoVerifier = errors.New("no way to authenticate /bo is configured")

// Middleware answers 401 unless the request carries a bearer token one of
// verifiers accepts. Tokens are never logged.
func Middleware(verifiers ...Verifier) (gin.HandlerFunc, error) {
	if len(verifiers) == 0 {
		return nil, ErrNoVerifier
	}
	return func(c *gin.Context) {
		token, ok := bearer(c.GetHeader("Authorization"))
		if !ok {
			httpx.Fail(c, problem.Unauthorized("a bearer token is required"))
			return
		}
		for _, v := range verifiers {
			if v.Verify(c.Request.Context(), token) {
				c.Next()
				return
			}
		}
		httpx.Fail(c, problem.Unauthorized("the bearer token is not valid"))
	}, nil
}

// bearer extracts the token of an "Authorization: Bearer <token>" header;
// the scheme is case-insensitive (RFC 9110 §11.1).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}
