// Package signin owns the console's sign-in at an OpenID provider: the
// authorization-code flow with PKCE (RFC 7636, S256). Each attempt's
// state, nonce and code verifier are kept on the server for a few
// minutes, bound to the browser that started it (a random value in a
// cookie) and used once. The ID token is verified (signature, issuer,
// audience, expiry, nonce); the access token obtained is what the console
// sends to the gateway's /bo API, which decides the person's role as for
// any other client.
package signin

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// Config is one provider and the console's client there.
type Config struct {
	Issuer   string
	ClientID string
	// ClientSecret is empty for a public client (PKCE alone).
	ClientSecret string
	// RedirectURL is the console's callback, registered at the provider.
	RedirectURL string
	Scopes      []string
	// HTTP calls the provider; its timeout bounds each call.
	HTTP *http.Client
}

// AttemptTTL is how long a sign-in may take at the provider.
const AttemptTTL = 10 * time.Minute

// maxAttempts bounds the attempts kept: each costs an unauthenticated
// request, so a flood of them must not grow memory without end.
const maxAttempts = 10000

// Provider signs people in at one OpenID provider.
type Provider struct {
	cfg Config
	now func() time.Time
	// found is guarded by discoverMu, held across the provider's answer
	// so that one request discovers; attempts by mu, never held across a
	// call to the provider.
	discoverMu sync.Mutex
	found      *discovered // nil until the provider has been reached once
	mu         sync.Mutex
	attempts   map[string]attempt
}

// discovered is what the provider's discovery document gave.
type discovered struct {
	oauth      oauth2.Config
	verifier   *oidc.IDTokenVerifier
	endSession string
}

// attempt is one sign-in under way, keyed by its state.
type attempt struct {
	binding, nonce, verifier string
	expires                  time.Time
}

// Result is a person the provider signed in.
type Result struct {
	AccessToken string
	IDToken     string
	// Expires is when the access token does (zero: not said).
	Expires time.Time
}

// Unavailable is a provider that could not be reached or answered
// nonsense: the person may try again later.
type Unavailable struct{ Err error }

func (e *Unavailable) Error() string { return "the identity provider is unavailable: " + e.Err.Error() }

func (e *Unavailable) Unwrap() error { return e.Err }

// Refused is a sign-in the provider (or the checks of its answer) did not
// complete: the reason may be shown.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return e.Reason }

// ErrAttempt is a callback matching no attempt of this browser: unknown,
// already used, expired, or started in another browser.
var ErrAttempt = errors.New("no sign-in of this browser is waiting for this answer")

// ErrBusy is too many attempts under way at once.
var ErrBusy = errors.New("too many sign-ins are under way; try again in a minute")

// New returns a provider; it contacts nobody until the first sign-in, so
// the console starts while the identity provider is down.
func New(cfg Config) *Provider {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	return &Provider{cfg: cfg, now: time.Now, attempts: map[string]attempt{}}
}

// discover reads the provider's discovery document, once it answers.
func (p *Provider) discover(ctx context.Context) (*discovered, error) {
	p.discoverMu.Lock()
	defer p.discoverMu.Unlock()
	if p.found != nil {
		return p.found, nil
	}
	op, err := oidc.NewProvider(p.ctx(ctx), p.cfg.Issuer)
	if err != nil {
		return nil, &Unavailable{Err: err}
	}
	var extra struct {
		EndSession string `json:"end_session_endpoint"`
	}
	_ = op.Claims(&extra) // the document parsed already; the field is optional
	p.found = &discovered{
		oauth: oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
			Endpoint: op.Endpoint(), RedirectURL: p.cfg.RedirectURL, Scopes: p.cfg.Scopes},
		verifier:   op.Verifier(&oidc.Config{ClientID: p.cfg.ClientID}),
		endSession: extra.EndSession,
	}
	return p.found, nil
}

// ctx carries the HTTP client both libraries use for the provider.
func (p *Provider) ctx(ctx context.Context) context.Context {
	return context.WithValue(oidc.ClientContext(ctx, p.cfg.HTTP), oauth2.HTTPClient, p.cfg.HTTP)
}

// Start begins an attempt: where to send the browser, and the binding
// the browser must bring back (in a cookie) with the provider's answer.
func (p *Provider) Start(ctx context.Context) (authURL, binding string, err error) {
	d, err := p.discover(ctx)
	if err != nil {
		return "", "", err
	}
	state := oauth2.GenerateVerifier() // 256 random bits, URL-safe
	a := attempt{binding: oauth2.GenerateVerifier(), nonce: oauth2.GenerateVerifier(),
		verifier: oauth2.GenerateVerifier(), expires: p.now().Add(AttemptTTL)}
	if err := p.put(state, a); err != nil {
		return "", "", err
	}
	return d.oauth.AuthCodeURL(state, oidc.Nonce(a.nonce), oauth2.S256ChallengeOption(a.verifier)), a.binding, nil
}

func (p *Provider) put(state string, a attempt) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for s, old := range p.attempts {
		if !now.Before(old.expires) {
			delete(p.attempts, s)
		}
	}
	if len(p.attempts) >= maxAttempts {
		return ErrBusy
	}
	p.attempts[state] = a
	return nil
}

// take removes the attempt state names (used once, whatever follows) and
// returns it when it is live and binding is the browser's.
func (p *Provider) take(state, binding string) (attempt, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.attempts[state]
	delete(p.attempts, state)
	if !ok || !p.now().Before(a.expires) || subtle.ConstantTimeCompare([]byte(a.binding), []byte(binding)) != 1 {
		return attempt{}, false
	}
	return a, true
}

// Finish completes the attempt the provider's answer (the callback's
// query) names: the code is exchanged with the attempt's verifier and the
// ID token checked.
func (p *Provider) Finish(ctx context.Context, answer url.Values, binding string) (Result, error) {
	a, ok := p.take(answer.Get("state"), binding)
	if !ok || binding == "" {
		return Result{}, ErrAttempt
	}
	if e := answer.Get("error"); e != "" {
		return Result{}, &Refused{Reason: fmt.Sprintf("the identity provider answered %q: %s", e, answer.Get("error_description"))}
	}
	d, err := p.discover(ctx)
	if err != nil {
		return Result{}, err
	}
	tok, err := d.oauth.Exchange(p.ctx(ctx), answer.Get("code"), oauth2.VerifierOption(a.verifier))
	var refused *oauth2.RetrieveError
	switch {
	case errors.As(err, &refused) && refused.Response != nil && refused.Response.StatusCode < 500:
		return Result{}, &Refused{Reason: "the identity provider refused the sign-in code (" + refused.ErrorCode + ")"}
	case err != nil:
		return Result{}, &Unavailable{Err: err}
	}
	raw, _ := tok.Extra("id_token").(string)
	if err := p.check(ctx, d, raw, tok.AccessToken, a.nonce); err != nil {
		return Result{}, err
	}
	return Result{AccessToken: tok.AccessToken, IDToken: raw, Expires: tok.Expiry}, nil
}

// check verifies the ID token and that it belongs with this attempt and
// this access token.
func (p *Provider) check(ctx context.Context, d *discovered, raw, accessToken, nonce string) error {
	if raw == "" || accessToken == "" {
		return &Refused{Reason: "the identity provider gave no ID token or no access token"}
	}
	idt, err := d.verifier.Verify(p.ctx(ctx), raw)
	if err != nil {
		return &Refused{Reason: "the ID token is not valid: " + err.Error()}
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return &Refused{Reason: "the ID token was not issued for this sign-in (nonce)"}
	}
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(accessToken); err != nil {
			return &Refused{Reason: "the access token does not match the ID token (at_hash)"}
		}
	}
	return nil
}

// EndSessionURL is where to send a browser that signed out to end its
// session at the provider too (RP-initiated logout), or "" when the
// provider has no end_session_endpoint or was never reached.
func (p *Provider) EndSessionURL(idToken, postLogout string) string {
	p.discoverMu.Lock()
	d := p.found
	p.discoverMu.Unlock()
	if d == nil || d.endSession == "" {
		return ""
	}
	u, err := url.Parse(d.endSession)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("client_id", p.cfg.ClientID)
	q.Set("id_token_hint", idToken)
	q.Set("post_logout_redirect_uri", postLogout)
	u.RawQuery = q.Encode()
	return u.String()
}
