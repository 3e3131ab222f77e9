package e2e

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/testkit"
)

// The console's client at the test provider (oidcprovider's defaults).
const (
	oidcClient = "doclib-console"
	oidcSecret = "console-secret"
)

var (
	providerOnce sync.Once
	providerErr  error
)

// startProvider starts the real OpenID provider of oidcprovider/ on addr
// (built once, outside the workspace: see its doc) with users
// NAME:PASSWORD:ROLE, and stops it when t ends.
func startProvider(t *testing.T, addr string, users ...string) *devserver.Process {
	t.Helper()
	bin := filepath.Join(buildServices(t), "oidcprovider")
	providerOnce.Do(func() {
		cmd := exec.Command("go", "build", "-o", bin, ".")
		cmd.Dir = "oidcprovider"
		cmd.Env = append(cmd.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			providerErr = fmt.Errorf("%w\n%s", err, out)
		}
	})
	testkit.Must(t, providerErr, "build the OpenID provider")
	args := []string{"-addr", addr, "-client", oidcClient, "-secret", oidcSecret}
	for _, u := range users {
		args = append(args, "-user", u)
	}
	p, err := devserver.Start("oidcprovider", bin, args, nil, &testkit.Buffer{})
	testkit.Must(t, err, "start the OpenID provider")
	t.Cleanup(p.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testkit.Must(t, devserver.WaitHTTP(ctx, p, "http://"+addr+"/.well-known/openid-configuration"), "provider ready")
	return p
}

// browserClient keeps cookies and follows no redirect, so each hop can
// be looked at.
func browserClient() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// fetch sends a GET and returns the answer with its body read.
func fetch(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	return res, readAll(t, res)
}

// next is where res redirects to, resolved against from.
func next(t *testing.T, from string, res *http.Response) string {
	t.Helper()
	loc, err := res.Request.URL.Parse(res.Header.Get("Location"))
	if err != nil || res.StatusCode/100 != 3 {
		t.Fatalf("%s: %d to %q, want a redirect", from, res.StatusCode, res.Header.Get("Location"))
	}
	return loc.String()
}

// oidcAttempt is one sign-in at the provider, up to the provider's
// answer that sends the browser back to the console.
type oidcAttempt struct {
	authorize *url.URL // the authorization request the console made
	callback  string   // the console's callback with the code and state
}

// logInAtProvider starts a sign-in in c and logs in at the provider's
// form as user, stopping before the console's callback.
func logInAtProvider(t *testing.T, st *Stack, c *http.Client, user, password string) oidcAttempt {
	t.Helper()
	res := startAtProvider(t, c, st)
	auth, _ := url.Parse(movesOnTo(t, res, readAll(t, res)))
	at := oidcAttempt{authorize: auth}
	u := auth.String()
	for i := 0; !strings.Contains(u, "/login/username"); i++ { // the provider sends to its login form
		res, _ = fetch(t, c, u)
		u = next(t, u, res)
		if i > 5 {
			t.Fatalf("the provider never showed its login form (at %s)", u)
		}
	}
	login, _ := url.Parse(u)
	res, err := c.PostForm(login.Scheme+"://"+login.Host+"/login/username", url.Values{
		"id": {login.Query().Get("authRequestID")}, "username": {user}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	u = next(t, "the login form", res)
	for !strings.Contains(u, "/console/sign-in/callback") {
		res, _ = fetch(t, c, u)
		u = next(t, u, res)
	}
	at.callback = u
	return at
}

// movesOnTo is where the page that starts a sign-in sends the browser on
// to by itself (a meta refresh: not a redirect, which form-action would
// govern).
func movesOnTo(t *testing.T, res *http.Response, page string) string {
	t.Helper()
	m := regexp.MustCompile(`<meta http-equiv="refresh" content="0; url=([^"]+)">`).FindStringSubmatch(page)
	if res.StatusCode != http.StatusOK || m == nil {
		t.Fatalf("start: %d, want a page moving on to the provider; page %.400s", res.StatusCode, page)
	}
	return html.UnescapeString(m[1])
}

// startAtProvider starts a sign-in at the provider as the sign-in page's
// form does: a POST.
func startAtProvider(t *testing.T, c *http.Client, st *Stack) *http.Response {
	t.Helper()
	res, err := c.PostForm(st.AdminURL+"/console/sign-in/provider", nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// signInOIDC signs user in through the provider and returns the
// browser, signed in to the console.
func signInOIDC(t *testing.T, st *Stack, user, password string) *http.Client {
	t.Helper()
	c := browserClient()
	at := logInAtProvider(t, st, c, user, password)
	res, page := fetch(t, c, at.callback)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/" {
		t.Fatalf("the callback for %s: %d to %q, want 303 to /console/; page %.400s", user, res.StatusCode, res.Header.Get("Location"), page)
	}
	return c
}

// TestConsoleSignInWithOIDC signs in to the console through a real OpenID
// provider (zitadel/oidc's example provider, JWT access tokens carrying
// roles) and the real stack: the gateway trusts the provider, so the
// roles it decides are the ones the console shows and enforces.
func TestConsoleSignInWithOIDC(t *testing.T) {
	t.Parallel()
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free port")
	issuer := "http://" + addr
	st := NewStack(t, map[string][]string{
		"gateway": {"OIDC_ISSUER_URL=" + issuer, "OIDC_AUDIENCE=" + oidcClient, "OIDC_ROLE_CLAIM=roles"},
		"console": {"CONSOLE_OIDC_ISSUER_URL=" + issuer, "CONSOLE_OIDC_CLIENT_ID=" + oidcClient,
			"CONSOLE_OIDC_CLIENT_SECRET=" + oidcSecret},
	})
	// The provider is not up yet: a clear page, not a 500.
	res := startAtProvider(t, browserClient(), st)
	page := readAll(t, res)
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, "identity provider cannot be reached") {
		t.Errorf("sign-in with the provider down: %d, want 503 saying so; page %.300s", res.StatusCode, page)
	}
	startProvider(t, addr, "ed:ed-password:editor", "vi:vi-password:viewer", "nobody:nobody-password:")
	waitForDiscovery(t, st)
	waitForConsoleDiscovery(t, st)

	t.Run("in Chromium the sign-in button reaches the provider", func(t *testing.T) { oidcInABrowser(t, st, issuer) })
	var editor *http.Client
	t.Run("an editor signs in, lists and edits", func(t *testing.T) { editor = oidcEditor(t, st) })
	t.Run("the provider's answer is used once, by its browser", func(t *testing.T) { oidcReplays(t, st) })
	t.Run("a viewer reads and is refused an edit", func(t *testing.T) { oidcViewer(t, st) })
	t.Run("an account without a role is told so", func(t *testing.T) {
		c := browserClient()
		at := logInAtProvider(t, st, c, "nobody", "nobody-password")
		res, page := fetch(t, c, at.callback)
		if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "no role in the library") {
			t.Errorf("callback for a user without a role: %d, want 403 saying so; page %.300s", res.StatusCode, page)
		}
	})
	t.Run("sign-out ends the session on the server", func(t *testing.T) {
		if editor == nil {
			t.Skip("no editor signed in")
		}
		oidcSignOut(t, st, editor, issuer)
	})
}

// waitForDiscovery waits until the gateway has read the provider's
// discovery document (it retries in the background): a JWT is then no
// longer 503.
func waitForDiscovery(t *testing.T, st *Stack) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := st.ReqAt(st.AdminURL, "GET", "/bo/me", nil, "Authorization", "Bearer e30.e30.e30")
		if r.Status != http.StatusServiceUnavailable {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the gateway never discovered the provider")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitForConsoleDiscovery waits until the console starts sign-ins again:
// it keeps the provider's failure a few seconds before asking it again.
func waitForConsoleDiscovery(t *testing.T, st *Stack) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := startAtProvider(t, browserClient(), st)
		readAll(t, res)
		if res.StatusCode == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the console never discovered the provider: %d", res.StatusCode)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func oidcEditor(t *testing.T, st *Stack) *http.Client {
	c := browserClient()
	at := logInAtProvider(t, st, c, "ed", "ed-password")
	q := at.authorize.Query()
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 {
		t.Errorf("the authorization request has code_challenge %q method %q, want a S256 challenge",
			q.Get("code_challenge"), q.Get("code_challenge_method"))
	}
	for _, k := range []string{"state", "nonce"} {
		if len(q.Get(k)) < 40 {
			t.Errorf("the authorization request's %s is %q, want 256 random bits", k, q.Get(k))
		}
	}
	if q.Get("redirect_uri") != st.AdminURL+"/console/sign-in/callback" || q.Get("response_type") != "code" {
		t.Errorf("redirect_uri %q response_type %q", q.Get("redirect_uri"), q.Get("response_type"))
	}
	res, _ := fetch(t, c, at.callback)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("callback: %d, want 303", res.StatusCode)
	}
	for _, ck := range res.Cookies() {
		// The provider's access tokens last 5 minutes: the session no longer.
		if ck.Name == "doclib_console" && (ck.MaxAge <= 0 || ck.MaxAge > 300) {
			t.Errorf("the session cookie lasts %d s, want at most the access token's 300 s", ck.MaxAge)
		}
	}
	res, page := fetch(t, c, st.AdminURL+"/console/")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "Signed in as ed (editor)") {
		t.Fatalf("documents page: %d, want 200 signed in as ed (editor); page %.300s", res.StatusCode, page)
	}
	// An edit: the settings page's address, recorded as the JWT's sub.
	res, err := c.PostForm(st.AdminURL+"/console/settings", url.Values{"moderatorEmail": {"oidc@example.org"}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	if res.StatusCode != http.StatusSeeOther {
		t.Errorf("an editor's settings: %d, want 303", res.StatusCode)
	}
	var cfg struct{ ModeratorEmail, UpdatedBy string }
	st.Must("GET", "/bo/config", nil, 200).JSON(t, &cfg)
	if cfg.ModeratorEmail != "oidc@example.org" || cfg.UpdatedBy != "ed" {
		t.Errorf("config %+v, want oidc@example.org set by ed (the JWT's sub)", cfg)
	}
	return c
}

// oidcReplays: a callback is refused when replayed, when its state is
// wrong, and in another browser than the one that started the attempt,
// which still finishes its own; a sign-in is not started by a GET (a
// link or image of another site) nor by another site's form.
func oidcReplays(t *testing.T, st *Stack) {
	refused := func(what string, c *http.Client, u string) {
		t.Helper()
		res, page := fetch(t, c, u)
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(page, "Sign in again") {
			t.Errorf("%s: %d, want 400 asking to sign in again; page %.300s", what, res.StatusCode, page)
		}
	}
	c := browserClient()
	at := logInAtProvider(t, st, c, "ed", "ed-password")
	if res, _ := fetch(t, c, at.callback); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("first use of the callback: %d, want 303", res.StatusCode)
	}
	refused("the same callback again", c, at.callback)

	at = logInAtProvider(t, st, c, "ed", "ed-password")
	u, _ := url.Parse(at.callback)
	q := u.Query()
	q.Set("state", q.Get("state")+"x")
	u.RawQuery = q.Encode()
	refused("a wrong state", c, u.String())
	if res, _ := fetch(t, c, at.callback); res.StatusCode != http.StatusSeeOther {
		t.Errorf("the right state after a wrong one: %d, want 303 (a callback naming another state leaves the attempt alone)", res.StatusCode)
	}

	at = logInAtProvider(t, st, c, "ed", "ed-password")
	refused("the callback in another browser", browserClient(), at.callback)
	if res, _ := fetch(t, c, at.callback); res.StatusCode != http.StatusSeeOther {
		t.Errorf("then in the browser that started it: %d, want 303 (another browser's try does not spend it)", res.StatusCode)
	}
	if res, _ := fetch(t, c, st.AdminURL+"/console/sign-in/provider"); res.StatusCode < 400 {
		t.Errorf("a GET started a sign-in: %d to %s", res.StatusCode, res.Header.Get("Location"))
	}
	req, _ := http.NewRequest("POST", st.AdminURL+"/console/sign-in/provider", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, res); res.StatusCode != http.StatusForbidden {
		t.Errorf("another site's form started a sign-in: %d, want 403", res.StatusCode)
	}
}

func oidcViewer(t *testing.T, st *Stack) {
	c := signInOIDC(t, st, "vi", "vi-password")
	res, page := fetch(t, c, st.AdminURL+"/console/")
	if res.StatusCode != http.StatusOK || !strings.Contains(page, "Signed in as vi (viewer)") || strings.Contains(page, "New document") {
		t.Errorf("documents page: %d, want 200 signed in as vi (viewer) without edit links", res.StatusCode)
	}
	res, err := c.PostForm(st.AdminURL+"/console/categories", url.Values{"id": {"viewer-theme"}, "name": {"Nope"}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's new category: %d, want 403", res.StatusCode)
	}
	st.Must("GET", "/bo/tags-categories", nil, 200)
}

// oidcSignOut: sign-out ends the session on the server (the old cookie
// signs nobody in) and offers a link ending the session at the provider,
// which sends the browser back to the console.
func oidcSignOut(t *testing.T, st *Stack, c *http.Client, issuer string) {
	base, _ := url.Parse(st.AdminURL + "/console/")
	var old *http.Cookie
	for _, ck := range c.Jar.Cookies(base) {
		if ck.Name == "doclib_console" {
			old = ck
		}
	}
	if old == nil {
		t.Fatal("no session cookie")
	}
	res, err := c.PostForm(st.AdminURL+"/console/sign-out", nil)
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, res)
	link := regexp.MustCompile(`href="(` + regexp.QuoteMeta(issuer) + `/end_session\?[^"]+)"`).FindStringSubmatch(page)
	if res.StatusCode != http.StatusOK || link == nil || !strings.Contains(link[1], "id_token_hint=") {
		t.Fatalf("sign-out: %d, want 200 with a link to the provider's end_session_endpoint; page %.600s", res.StatusCode, page)
	}
	req, _ := http.NewRequest("GET", st.AdminURL+"/console/", nil)
	req.AddCookie(&http.Cookie{Name: old.Name, Value: old.Value})
	res, err = browserClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/console/sign-in?why=expired" {
		t.Errorf("the old cookie after sign-out: %d to %q, want 303 to the sign-in", res.StatusCode, loc)
	}
	// A form sent with the ended session: nothing saved, what was typed kept.
	req, _ = http.NewRequest("POST", st.AdminURL+"/console/settings", strings.NewReader("moderatorEmail=kept%40example.org"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: old.Name, Value: old.Value})
	res, err = browserClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if page := readAll(t, res); res.StatusCode != http.StatusUnauthorized || !strings.Contains(page, "session has ended") ||
		!strings.Contains(page, "kept@example.org") {
		t.Errorf("settings sent after sign-out: %d, want 401 saying the session ended, with the typed address; page %.400s", res.StatusCode, page)
	}
	// The link ends the session at the provider, which sends the browser back.
	u := html.UnescapeString(link[1])
	for i := 0; i < 5 && !strings.HasPrefix(u, st.AdminURL); i++ {
		res, _ = fetch(t, c, u)
		u = next(t, u, res)
	}
	if u != st.AdminURL+"/console/sign-in?why=signed-out" {
		t.Errorf("the provider's sign-out sent the browser to %q, want the console's sign-in", u)
	}
}

// oidcInABrowser: the sign-in page's form reaches the provider in
// Chromium. The POST is answered by a page that moves on by itself (a meta
// refresh): Chromium applies the page's CSP form-action ('self') to every
// redirect after a form's POST, so a redirect would be stopped there, and
// so would a provider's own redirect on to a third origin.
func oidcInABrowser(t *testing.T, st *Stack, issuer string) {
	b := newBrowser(t)
	atProvider := `location.href.startsWith(` + strconv.Quote(issuer+"/") + `)`
	b.run(t, "sign in at the provider", chromedp.Navigate(st.AdminURL+"/console/sign-in"),
		chromedp.Click(chromedp.CSS(`form[action="/console/sign-in/provider"] button`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			for {
				if ok, err := chromedp.Evaluate[bool](atProvider)(ctx, tg); err == nil && ok {
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("the browser never reached the provider: %w", ctx.Err())
				case <-time.After(100 * time.Millisecond):
				}
			}
		}))
}
