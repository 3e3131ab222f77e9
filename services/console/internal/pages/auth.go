package pages

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/session"
)

const (
	cookieName = "doclib_console"
	sessionKey = "session"
)

func (p *Pages) signInPage(c *gin.Context) {
	p.render(c, http.StatusOK, "signin", view{Title: "Sign in", Notice: notice(c.Query("why")),
		Data: p.signInOptions()})
}

// notice turns a redirect's reason into words.
func notice(why string) string {
	switch why {
	case "expired":
		return "Your session has ended. Sign in again."
	case "signed-out":
		return "You are signed out."
	}
	return ""
}

// signIn checks the token with the API and starts a session.
func (p *Pages) signIn(c *gin.Context) {
	if !p.cfg.TokenSignIn {
		c.Status(http.StatusNotFound)
		return
	}
	token := strings.TrimSpace(c.PostForm("token"))
	if token == "" {
		p.signInFailed(c, &boclient.APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
			Errors: []boclient.FieldError{{Field: "token", Message: "enter your API token"}}, Detail: "The token is missing."})
		return
	}
	me, e := p.checkToken(c, token)
	if e != nil {
		p.signInFailed(c, e)
		return
	}
	p.startSession(c, session.Session{Token: token, Name: me.Name, Role: session.Role(me.Role)})
}

// startSession signs the browser in as s, ending the session its cookie
// named before (a second sign-in leaves no live session behind), and
// sends it to the documents.
func (p *Pages) startSession(c *gin.Context, s session.Session) {
	if old, err := c.Cookie(p.cookie(cookieName)); err == nil {
		p.cfg.Sessions.Delete(old)
	}
	s = p.cfg.Sessions.Add(s)
	p.setCookie(c, cookieName, s.ID, Base+"/", max(1, int(time.Until(s.Expires)/time.Second))) // 0 would make it a browser-session cookie
	c.Redirect(http.StatusSeeOther, Base+"/")
}

// checkToken asks the gateway who token names. Every such call reaches
// the gateway from the console's own address, so wrong tokens would spend
// the gateway's failed-authentication budget of that address for every
// console user: the console keeps its own budget per browser address and
// refuses a browser that spent it before calling the gateway.
func (p *Pages) checkToken(c *gin.Context, token string) (boclient.Me, *boclient.APIError) {
	key := ratelimit.ClientKey(browserIP(c))
	if limit := p.cfg.SignInFailures; limit != nil {
		if spent, wait := limit.Spent(key); spent {
			return boclient.Me{}, tooManySignIns(c, wait)
		}
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), p.cfg.Timeout)
	defer cancel()
	me, err := p.cfg.API.Me(ctx, token)
	if err == nil {
		return me, nil
	}
	e := boclient.AsAPIError(err)
	switch e.Status {
	case http.StatusUnauthorized:
		if limit := p.cfg.SignInFailures; limit != nil {
			limit.Allow(key)
		}
		e.Errors = []boclient.FieldError{{Field: "token", Message: "this token is not valid"}}
	case http.StatusTooManyRequests: // the gateway's budget of the console's address
		return boclient.Me{}, tooManySignIns(c, time.Minute)
	}
	return boclient.Me{}, e
}

// browserIP is the browser's address the gateway forwarded, else the
// peer's (the console reached without the gateway, in tests).
func browserIP(c *gin.Context) string {
	if ip := c.GetHeader(httpx.ClientIPHeader); ip != "" {
		return ip
	}
	return c.RemoteIP()
}

func tooManySignIns(c *gin.Context, wait time.Duration) *boclient.APIError {
	secs := ratelimit.RetryAfterSeconds(wait)
	c.Header("Retry-After", strconv.Itoa(secs))
	return &boclient.APIError{Status: http.StatusTooManyRequests, Code: "rate_limited",
		Detail: fmt.Sprintf("Too many failed sign-ins from your address: try again in %d seconds.", secs)}
}

// cookie is the name of one of the console's cookies as sent: behind TLS
// with the __Host- prefix, so that the browser takes it only Secure, from
// this host (no Domain) and for Path=/ (a sub-domain cannot plant one).
func (p *Pages) cookie(name string) string {
	if p.cfg.SecureCookie {
		return "__Host-" + name
	}
	return name
}

// setCookie sets (maxAge < 0: clears) one of the console's cookies; path
// narrows it except behind TLS, where __Host- wants Path=/.
func (p *Pages) setCookie(c *gin.Context, name, value, path string, maxAge int) {
	if p.cfg.SecureCookie {
		path = "/"
	}
	http.SetCookie(c.Writer, &http.Cookie{
		Name: p.cookie(name), Value: value, Path: path, MaxAge: maxAge,
		HttpOnly: true, Secure: p.cfg.SecureCookie, SameSite: http.SameSiteLaxMode,
	})
}

// signOut ends the session on the server and clears the cookie. A person
// signed in at the provider is offered a link that ends the session there
// too (end_session_endpoint, when the provider has one): a link, not a
// redirect, as the page's CSP (form-action 'self') would stop a form's
// redirect to another origin, and as leaving the organisation's account
// is the person's choice.
func (p *Pages) signOut(c *gin.Context) {
	end := ""
	if id, err := c.Cookie(p.cookie(cookieName)); err == nil {
		if s, ok := p.cfg.Sessions.Get(id); ok && s.IDToken != "" && p.cfg.OIDC != nil {
			end = p.cfg.OIDC.EndSessionURL(s.IDToken, p.cfg.Origin+Base+"/sign-in?why=signed-out")
		}
		p.cfg.Sessions.Delete(id)
	}
	p.setCookie(c, cookieName, "", Base+"/", -1)
	if end == "" {
		c.Redirect(http.StatusSeeOther, Base+"/sign-in?why=signed-out")
		return
	}
	opts := p.signInOptions()
	opts.EndSession = end
	p.render(c, http.StatusOK, "signin", view{Title: "Sign in", Notice: notice("signed-out"), Data: opts})
}

// requireSession lets in a request with a live session; others go to the
// sign-in page (a read) or are told their session ended (a write, whose
// form is answered again by the handler that owns it: see expired).
func (p *Pages) requireSession(c *gin.Context) {
	id, err := c.Cookie(p.cookie(cookieName))
	s, ok := p.cfg.Sessions.Get(id)
	if err != nil || !ok {
		why := ""
		if err == nil {
			why = "?why=expired"
		}
		if c.Request.Method == http.MethodGet {
			c.Redirect(http.StatusSeeOther, Base+"/sign-in"+why)
			c.Abort()
			return
		}
		c.Set(expiredKey, true)
		c.Next()
		return
	}
	c.Set(sessionKey, s)
	c.Next()
}

const expiredKey = "expired"

// current is the request's session; ok is false for a write whose session
// ended (the handler keeps what was typed and says so).
func current(c *gin.Context) (session.Session, bool) {
	s, ok := c.Get(sessionKey)
	if !ok {
		return session.Session{}, false
	}
	return s.(session.Session), true
}

// sessionEnded is the error shown when a write comes without a session.
var sessionEnded = &boclient.APIError{Status: http.StatusUnauthorized, Code: "session_ended",
	Detail: "Your session has ended, so nothing was saved. Sign in again in another tab, then send this form again: what you typed is kept below."}

// requireEditor refuses a viewer's write before it reaches the API (which
// would refuse it too).
func (p *Pages) requireEditor(c *gin.Context) {
	s, ok := current(c)
	if ok && !s.CanEdit() {
		p.render(c, http.StatusForbidden, "error", view{Title: "Not allowed",
			Error: &boclient.APIError{Status: http.StatusForbidden, Code: "forbidden", Detail: "You may read the library but not change it."}})
		c.Abort()
		return
	}
	c.Next()
}
