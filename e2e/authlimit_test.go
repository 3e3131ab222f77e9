package e2e

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestFailedAuthenticationsAreLimited (issue 16 item 13) replays the
// review's attack through the gateway with its default limit
// (BO_AUTH_FAILURE_LIMIT, 60 a minute per client): a client sending wrong
// tokens gets 401 for its budget, then 429 with Retry-After for every
// further failure, while its valid tokens never count and are still served
// (issue 21 item 3), and the public routes stay open. Before the limit,
// 1,000 wrong tokens were 1,000 answers of 401.
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

	// Refused failures never lock out the right token (issue 21 item 3).
	if r := st.BO("GET", "/bo/tags-categories", nil); r.Status != 200 {
		t.Errorf("the editor token from the refused client: %d, want 200", r.Status)
	}
	// The public routes are not affected.
	if r := st.Req("GET", "/public/tags-categories", nil); r.Status != 200 {
		t.Errorf("public read from the refused client: %d, want 200", r.Status)
	}
}

// TestAFloodOfWrongTokensDoesNotLockOutTheRightOne (issue 21 item 3)
// replays the review: many concurrent wrong-token requests from one
// address, and, during and after the flood, requests with the valid token
// from the same address. Every valid one is served; the flood itself is
// 401 for its budget, then 429. Before, once the budget was spent, the
// valid token was 429 too.
func TestAFloodOfWrongTokensDoesNotLockOutTheRightOne(t *testing.T) {
	st := NewStack(t, nil)
	const flooders, each = 8, 40 // 320 failures, over five times the default budget of 60
	var wg sync.WaitGroup
	var limited atomic.Int64
	for f := range flooders {
		wg.Go(func() {
			for i := range each {
				r := st.Req("GET", "/bo/documents", nil, "Authorization", fmt.Sprintf("Bearer wrong-%d-%d", f, i))
				switch r.Status {
				case 401:
				case 429:
					limited.Add(1)
				default:
					t.Errorf("wrong token: %d %s, want 401 or 429", r.Status, r.Body)
				}
			}
		})
	}
	valid := func(when string) {
		for i := range 20 {
			if r := st.BO("GET", "/bo/documents", nil); r.Status != 200 {
				t.Errorf("valid token %s the flood, request %d: %d %s, want 200", when, i+1, r.Status, r.Body)
				return
			}
		}
	}
	valid("during")
	wg.Wait()
	valid("after")
	if limited.Load() == 0 {
		t.Errorf("%d wrong tokens from one address, none refused: failures are no longer limited", flooders*each)
	}
}
