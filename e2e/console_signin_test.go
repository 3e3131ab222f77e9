package e2e

import (
	"net/http"
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
