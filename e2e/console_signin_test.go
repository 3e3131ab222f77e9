package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleTokenSignIn: the console asks the gateway who a token names
// (GET /bo/me, a read) and shows the name and role it answered.
func TestConsoleTokenSignIn(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	for _, tc := range []struct{ token, who string }{
		{Token, "Signed in as " + TokenName + " (editor)"},
		{ViewerToken, "Signed in as " + ViewerName + " (viewer)"},
	} {
		c := consoleClient(t, st, tc.token)
		res, err := c.Get(st.AdminURL + "/console/")
		if err != nil {
			t.Fatal(err)
		}
		if page := readAll(t, res); res.StatusCode != http.StatusOK || !strings.Contains(page, tc.who) {
			t.Errorf("documents page: %d, want 200 saying %q", res.StatusCode, tc.who)
		}
	}
}

// TestConsoleSignInFloodSparesOthers (the review's finding): every token
// sign-in through the console reaches the gateway from the console's own
// address, so wrong tokens typed there used to spend the gateway's
// per-client failed-authentication budget (BO_AUTH_FAILURE_LIMIT, 60 a
// minute) for every console user: after a flood from one browser, another
// browser's mistyped token was "too many failed authentications". The
// console now limits failed sign-ins per browser address (the one the
// gateway found, TRUSTED_PROXIES), before calling the gateway.
func TestConsoleSignInFloodSparesOthers(t *testing.T) {
	t.Parallel()
	st := NewStack(t, map[string][]string{"gateway": {"TRUSTED_PROXIES=127.0.0.1"}})
	const attacker, other = "203.0.113.7", "198.51.100.9"
	var refused int
	for i := range 80 { // more than the gateway's budget
		status, page := signInFrom(t, st, attacker, fmt.Sprintf("wrong-token-%03d", i))
		switch {
		case status == http.StatusTooManyRequests:
			refused++
		case status != http.StatusUnauthorized:
			t.Fatalf("wrong token %d: %d, want 401 or 429; page %.300s", i+1, status, page)
		}
	}
	if refused == 0 {
		t.Error("80 wrong tokens from one browser were never refused 429")
	}
	status, page := signInFrom(t, st, other, "mistyped-token")
	if status != http.StatusUnauthorized || !strings.Contains(page, "this token is not valid") {
		t.Errorf("another browser's mistyped token after the flood: %d, want 401 'this token is not valid'; page %.300s", status, page)
	}
	if status, page := signInFrom(t, st, other, Token); status != http.StatusSeeOther {
		t.Errorf("another browser's right token after the flood: %d, want 303; page %.300s", status, page)
	}
}

// signInFrom posts token to the console's sign-in as a browser at addr
// (through a proxy the gateway trusts).
func signInFrom(t *testing.T, st *Stack, addr, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", st.AdminURL+"/console/sign-in", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", addr)
	res, err := browserClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, readAll(t, res)
}
