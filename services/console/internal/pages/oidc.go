package pages

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/session"
	"github.com/doclib/services/console/internal/signin"
)

// attemptCookie, followed by the attempt's signin.CookieSuffix, holds a
// sign-in at the provider sealed, in the browser that started it; scoped
// to the sign-in paths, gone after the callback.
const attemptCookie = "doclib_console_signin_"

// signInOptions is what the sign-in page offers.
type signInOptions struct {
	Token    bool // a back-office API token
	Provider bool // the OpenID provider
	// Development names the development tokens (make dev only).
	Development bool
	// EndSession, after a sign-out, ends the session at the provider too.
	EndSession string
}

func (p *Pages) signInOptions() signInOptions {
	return signInOptions{Token: p.cfg.TokenSignIn, Provider: p.cfg.OIDC != nil, Development: p.cfg.Development}
}

// signInFailed shows the sign-in page again with what went wrong.
func (p *Pages) signInFailed(c *gin.Context, e *boclient.APIError) {
	p.render(c, status(e), "signin", view{Title: "Sign in", Error: e, Data: p.signInOptions()})
}

// startOIDC sends the browser to the provider with a new attempt. It is
// a POST, so the cross-origin protection stops another site starting
// sign-ins in a person's browser.
func (p *Pages) startOIDC(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	a, err := p.cfg.OIDC.Start(ctx)
	if err != nil {
		p.signInFailed(c, p.providerProblem(err))
		return
	}
	p.setCookie(c, attemptCookie+a.Cookie, a.Sealed, Base+"/sign-in/", int(signin.AttemptTTL/time.Second))
	// A page that moves on to the provider, not a redirect: browsers apply
	// form-action to every redirect after a form's POST, so a provider
	// sending the browser on to a third origin (an identity broker, a
	// federated directory) would be stopped by the page's CSP.
	p.render(c, http.StatusOK, "continue", view{Title: "Signing in", Data: a.URL, Refresh: a.URL})
}

// finishOIDC takes the provider's answer: the attempt it names is used up
// whatever happens, the gateway says who the access token names, and a
// session lasting no longer than the token starts.
func (p *Pages) finishOIDC(c *gin.Context) {
	name := attemptCookie + signin.CookieSuffix(c.Query("state"))
	sealed, err := c.Cookie(p.cookie(name))
	if err == nil { // only the attempt this answer names is cleared
		p.setCookie(c, name, "", Base+"/sign-in/", -1)
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	res, err := p.cfg.OIDC.Finish(ctx, c.Request.URL.Query(), sealed)
	if err != nil {
		p.signInFailed(c, p.providerProblem(err))
		return
	}
	me, err := p.cfg.API.Me(ctx, res.AccessToken)
	if err != nil {
		p.signInFailed(c, p.meProblem(err))
		return
	}
	// The ID token's preferred_username or name: the gateway's name is the
	// JWT's sub, often an opaque id.
	p.startSession(c, session.Session{Token: res.AccessToken, IDToken: res.IDToken, Name: cmp.Or(res.Name, me.Name),
		Role: session.Role(me.Role), Expires: res.Expires})
}

// withOIDC answers 404 for the provider's routes when there is none.
func (p *Pages) withOIDC(c *gin.Context) {
	if p.cfg.OIDC == nil {
		c.AbortWithStatus(http.StatusNotFound)
		return
	}
	c.Next()
}

// providerProblem says in words why a sign-in at the provider failed;
// each failure goes to the log at Warn with its reason (never a token),
// an outage's cause only there, not on the page.
func (p *Pages) providerProblem(err error) *boclient.APIError {
	var refused *signin.Refused
	var e *boclient.APIError
	switch {
	case errors.Is(err, signin.ErrAttempt):
		e = &boclient.APIError{Status: http.StatusBadRequest, Code: "sign_in_not_started",
			Detail: "This answer of the identity provider matches no sign-in started in this browser: it was already used, took too long, or was started elsewhere. Sign in again."}
	case errors.As(err, &refused):
		e = &boclient.APIError{Status: http.StatusUnauthorized, Code: "sign_in_refused",
			Detail: "The identity provider did not sign you in: " + refused.Reason + ". Sign in again."}
	default:
		e = &boclient.APIError{Status: http.StatusServiceUnavailable, Code: "provider_unavailable",
			Detail: "The identity provider cannot be reached right now, so nobody can sign in with it. Try again in a few minutes."}
	}
	p.cfg.Log.Warn("sign-in at the identity provider failed", "code", e.Code, "status", e.Status, "reason", err.Error())
	return e
}

// meProblem says why the gateway did not accept the provider's token.
func (p *Pages) meProblem(err error) *boclient.APIError {
	e := boclient.AsAPIError(err)
	switch e.Status {
	case http.StatusUnauthorized:
		e = &boclient.APIError{Status: http.StatusUnauthorized, Code: "token_not_accepted",
			Detail: "The library's API does not accept the identity provider's token: the gateway must trust this provider (OIDC_ISSUER_URL) with this console's client as the audience (OIDC_AUDIENCE)."}
	case http.StatusForbidden:
		e = &boclient.APIError{Status: http.StatusForbidden, Code: "no_role",
			Detail: "You are signed in at the identity provider, but your account has no role in the library. Ask for the viewer or editor role."}
	}
	p.cfg.Log.Warn("the gateway refused the identity provider's token at sign-in", "code", e.Code, "status", e.Status,
		"reason", boclient.AsAPIError(err).Detail)
	return e
}
