package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestFailedAuthenticationsAreLimited (issue 16 item 13) replays the
// review's attack through the gateway with its default limit
// (BO_AUTH_FAILURE_LIMIT, 60 a minute per client): a client sending wrong
// tokens gets 401 for its budget, then 429 with Retry-After for every /bo
// request, valid token included, while its valid tokens before never
// counted and the public routes stay open. Before the limit, 1,000 wrong
// tokens were 1,000 answers of 401.
func TestFailedAuthenticationsAreLimited(t *testing.T) {
	st := NewStack(t, nil)
	const budget = 60 // the default

	// Valid tokens never count, however many.
	for i := range 3 * budget {
		if r := st.BO("GET", "/bo/tags-categories", nil); r.Status != 200 {
			t.Fatalf("valid token, request %d: %d %s", i+1, r.Status, r.Body)
		}
	}

	began := time.Now()
	var unauthorized, limited int
	for i := range 1000 {
		r := st.Req("GET", "/bo/tags-categories", nil, "Authorization", fmt.Sprintf("Bearer wrong-token-%04d", i))
		switch r.Status {
		case 401:
			if limited > 0 {
				t.Fatalf("wrong token %d: 401 after %d answers of 429; a refused client stays refused until its budget refills", i+1, limited)
			}
			unauthorized++
		case 429:
			limited++
			if p := r.Problem(t); p.Code != "rate_limited" {
				t.Fatalf("wrong token %d: 429 with code %q, want rate_limited", i+1, p.Code)
			}
			if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 {
				t.Fatalf("wrong token %d: 429 with Retry-After %q, want a number of seconds", i+1, r.Header.Get("Retry-After"))
			}
		default:
			t.Fatalf("wrong token %d: %d %s, want 401 or 429", i+1, r.Status, r.Body)
		}
		if limited >= 100 {
			break // the limit holds; no need to send the other 900
		}
	}
	// The budget refills at one a second while the loop runs.
	refill := int(time.Since(began)/time.Second) + 1
	if unauthorized < budget || unauthorized > budget+refill {
		t.Errorf("%d wrong tokens answered 401 before the limit, want %d (plus %d refilled meanwhile)", unauthorized, budget, refill)
	}
	if limited == 0 {
		t.Fatalf("%d wrong tokens in a row, none refused: failed authentications are not limited", unauthorized)
	}

	// Refused, even a right token is refused: a guess that happens to be
	// right tells nothing either.
	if r := st.BO("GET", "/bo/tags-categories", nil); r.Status != 429 {
		t.Errorf("the editor token from the refused client: %d, want 429", r.Status)
	}
	// The public routes are not affected.
	if r := st.Req("GET", "/public/tags-categories", nil); r.Status != 200 {
		t.Errorf("public read from the refused client: %d, want 200", r.Status)
	}
}
