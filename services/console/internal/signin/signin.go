// Package signin owns the console's sign-in at an OpenID provider: the
// authorization-code flow with PKCE (RFC 7636, S256). An attempt's
// state, nonce and code verifier travel sealed (AES-GCM, a key made when
// the process starts) in a cookie of the browser that started it, one
// cookie per attempt: the server keeps nothing per attempt, so nobody can
// fill a table of attempts, and two tabs signing in do not disturb each
// other. The ID token is verified (signature, issuer, audience, expiry,
// nonce); the access token obtained is what the console sends to the
// gateway's /bo API, which decides the person's role as for any other
// client.
package signin

import (
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/doclib/libs/oidckeys"
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

// Provider signs people in at one OpenID provider.
type Provider struct {
	cfg  Config
	now  func() time.Time
	seal *sealer
	disc discovery
}

// discovered is what the provider's discovery document gave.
type discovered struct {
	oauth      oauth2.Config
	verifier   *oidc.IDTokenVerifier
	endSession string
}

// attempt is one sign-in under way, sealed in the browser's cookie.
type attempt struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	Expires  time.Time `json:"e"`
}

// Attempt is a sign-in started: where to send the browser, and the
// cookie (name suffix and sealed value) the browser must bring back.
type Attempt struct {
	URL    string
	Cookie string // the cookie's name suffix: CookieSuffix of the state
	Sealed string
}

// Result is a person the provider signed in.
type Result struct {
	AccessToken string
	IDToken     string
	// Name is the ID token's preferred_username, else its name, else "".
	Name string
	// Expires is when a session sending the access token must end: its
	// expires_in or its JWT exp, whichever is first, less Skew or a quarter of a short life (zero:
	// neither said).
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

// New returns a provider; it contacts nobody until the first sign-in (or
// DiscoverInBackground), so the console starts while the identity
// provider is down.
func New(cfg Config) *Provider {
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: ProviderTimeout}
	}
	p := &Provider{cfg: cfg, now: time.Now, seal: newSealer()}
	p.disc.fetch = p.fetchDiscovery
	p.disc.now = func() time.Time { return p.now() }
	return p
}

// fetchDiscovery reads the provider's discovery document.
func (p *Provider) fetchDiscovery(ctx context.Context) (*discovered, error) {
	op, err := oidc.NewProvider(p.ctx(ctx), p.cfg.Issuer)
	if err != nil {
		return nil, &Unavailable{Err: err}
	}
	var extra struct {
		EndSession string `json:"end_session_endpoint"`
		JWKS       string `json:"jwks_uri"`
	}
	_ = op.Claims(&extra) // the document parsed already (jwks_uri is required there)
	if err := browserURL(op.Endpoint().AuthURL); err != nil {
		return nil, &Unavailable{Err: fmt.Errorf("the provider's authorization_endpoint: %w", err)}
	}
	keys := oidckeys.New(p.cfg.HTTP, extra.JWKS)
	return &discovered{
		oauth: oauth2.Config{ClientID: p.cfg.ClientID, ClientSecret: p.cfg.ClientSecret,
			Endpoint: op.Endpoint(), RedirectURL: p.cfg.RedirectURL, Scopes: p.cfg.Scopes},
		verifier:   oidc.NewVerifier(p.cfg.Issuer, keys, &oidc.Config{ClientID: p.cfg.ClientID}),
		endSession: extra.EndSession,
	}, nil
}

// browserURL refuses an address the browser cannot be sent on to: the
// sign-in page would move on nowhere (html/template empties a javascript:
// or data: URL) and nothing would say why.
func browserURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return err
	case (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
		return fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	return nil
}

// ctx carries the HTTP client both libraries use for the provider.
func (p *Provider) ctx(ctx context.Context) context.Context {
	return context.WithValue(oidc.ClientContext(ctx, p.cfg.HTTP), oauth2.HTTPClient, p.cfg.HTTP)
}

// Start begins an attempt: where to send the browser, and the sealed
// attempt the browser keeps in a cookie until the provider's answer.
func (p *Provider) Start(ctx context.Context) (Attempt, error) {
	d, err := p.disc.get(ctx)
	if err != nil {
		return Attempt{}, err
	}
	a := attempt{State: oauth2.GenerateVerifier(), Nonce: oauth2.GenerateVerifier(), // 256 random bits each
		Verifier: oauth2.GenerateVerifier(), Expires: p.now().Add(AttemptTTL)}
	sealed, err := p.seal.seal(a)
	if err != nil {
		return Attempt{}, err
	}
	to := d.oauth.AuthCodeURL(a.State, oidc.Nonce(a.Nonce), oauth2.S256ChallengeOption(a.Verifier))
	return Attempt{URL: to, Cookie: CookieSuffix(a.State), Sealed: sealed}, nil
}

// open returns the attempt sealed names when it is this state's and live.
func (p *Provider) open(sealed, state string) (attempt, bool) {
	a, ok := p.seal.open(sealed)
	if !ok || state == "" || !p.now().Before(a.Expires) ||
		subtle.ConstantTimeCompare([]byte(a.State), []byte(state)) != 1 {
		return attempt{}, false
	}
	return a, true
}

// Finish completes the attempt the provider's answer (the callback's
// query) names, sealed being the browser's cookie for its state: the code
// is exchanged with the attempt's verifier and the ID token checked.
func (p *Provider) Finish(ctx context.Context, answer url.Values, sealed string) (Result, error) {
	a, ok := p.open(sealed, answer.Get("state"))
	if !ok {
		return Result{}, ErrAttempt
	}
	if e := answer.Get("error"); e != "" {
		return Result{}, &Refused{Reason: fmt.Sprintf("the identity provider answered %q: %s", e, answer.Get("error_description"))}
	}
	d, err := p.disc.get(ctx)
	if err != nil {
		return Result{}, err
	}
	tok, err := d.oauth.Exchange(p.ctx(ctx), answer.Get("code"), oauth2.VerifierOption(a.Verifier))
	var refused *oauth2.RetrieveError
	switch {
	case errors.As(err, &refused) && refused.Response != nil && refused.Response.StatusCode < 500:
		return Result{}, &Refused{Reason: "the identity provider refused the sign-in code (" + refused.ErrorCode + ")"}
	case err != nil:
		return Result{}, &Unavailable{Err: err}
	}
	raw, _ := tok.Extra("id_token").(string)
	name, err := p.check(ctx, d, raw, tok.AccessToken, a.Nonce)
	if err != nil {
		return Result{}, err
	}
	end := sessionEnd(tok, p.now())
	if !end.IsZero() && end.Sub(p.now()) < MinSession {
		return Result{}, &Refused{Reason: "the identity provider's access token expires at once (in under " +
			MinSession.String() + "): ask its administrator for a longer access-token lifespan"}
	}
	return Result{AccessToken: tok.AccessToken, IDToken: raw, Name: name, Expires: end}, nil
}

// check verifies the ID token and that it belongs with this attempt and
// this access token, and returns the person's name it gives.
func (p *Provider) check(ctx context.Context, d *discovered, raw, accessToken, nonce string) (string, error) {
	if raw == "" || accessToken == "" {
		return "", &Refused{Reason: "the identity provider gave no ID token or no access token"}
	}
	vctx, keysFailed := oidckeys.Watch(p.ctx(ctx))
	idt, err := d.verifier.Verify(vctx, raw)
	switch {
	case keysFailed() != nil:
		return "", &Unavailable{Err: keysFailed()}
	case err != nil:
		return "", &Refused{Reason: "the ID token is not valid: " + err.Error()}
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 {
		return "", &Refused{Reason: "the ID token was not issued for this sign-in (nonce)"}
	}
	if idt.AccessTokenHash != "" {
		if err := idt.VerifyAccessToken(accessToken); err != nil {
			return "", &Refused{Reason: "the access token does not match the ID token (at_hash)"}
		}
	}
	var who struct {
		PreferredUsername string `json:"preferred_username"`
		Name              string `json:"name"`
	}
	_ = idt.Claims(&who) // verified already; both claims are optional
	return cmp.Or(who.PreferredUsername, who.Name), nil
}

// EndSessionURL is where to send a browser that signed out to end its
// session at the provider too (RP-initiated logout), or "" when the
// provider has no end_session_endpoint or was never reached.
func (p *Provider) EndSessionURL(idToken, postLogout string) string {
	d := p.disc.known()
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
