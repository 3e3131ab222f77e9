package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestWritesDuringADatabasePauseAnswerAnUnknownOutcome (issue 21 item 14)
// replays the review: the database is paused for 10 s (every byte held,
// as kill -STOP holds them) while 8 clients PATCH their own documents and
// 4 create documents with an Idempotency-Key. Every answer comes within
// the README's ~5 s bound (before: 10-16 s) and a write's says its outcome
// is unknown, not "nothing changed, try again" (before: 503 unavailable,
// and the new titles were there once the database answered). Retrying a
// create with its key once the database is back makes no duplicate.
func TestWritesDuringADatabasePauseAnswerAnUnknownOutcome(t *testing.T) {
	db := newDBProxy(t)
	st := NewStack(t, map[string][]string{"catalog": {"MONGODB_URI=" + db.URI()}})
	ids := make([]string, 8)
	for i := range ids {
		var d docJSON
		st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"LINK","title":"doc %d","url":"https://x.org"}`, i), 201).JSON(t, &d)
		ids[i] = d.ID
	}
	create := func(i int) string {
		return fmt.Sprintf(`{"type":"LINK","title":"created %d","url":"https://x.org"}`, i)
	}
	key := func(i int) string { return fmt.Sprintf(`"create-%d-%d"`, i, time.Now().UnixNano()) }
	keys := make([]string, 4)
	for i := range keys {
		keys[i] = key(i)
	}

	db.pause()
	paused := time.Now()
	var wg sync.WaitGroup
	check := func(what string, r Response, took time.Duration, codes ...string) {
		if r.Status < 500 {
			return // answered before the pause took hold
		}
		p := r.Problem(t)
		ok := false
		for _, c := range codes {
			ok = ok || p.Code == c
		}
		if r.Status != 503 || !ok || took > 7*time.Second {
			t.Errorf("%s during the pause: %d %q in %s, want 503 %v within ~5 s", what, r.Status, p.Code, took.Round(100*time.Millisecond), codes)
		}
	}
	for i, id := range ids {
		wg.Go(func() {
			start := time.Now()
			r := st.BO("PATCH", "/bo/documents/"+id, fmt.Sprintf(`{"type":"LINK","title":"changed %d","url":"https://x.org"}`, i))
			check("PATCH "+id, r, time.Since(start), "outcome_unknown")
		})
	}
	for i := range keys {
		wg.Go(func() {
			start := time.Now()
			r := st.BO("POST", "/bo/documents", create(i), "Idempotency-Key", keys[i])
			// unavailable: the key could not be claimed, so nothing ran.
			check("POST with a key", r, time.Since(start), "outcome_unknown", "unavailable")
		})
	}
	wg.Wait()
	time.Sleep(10*time.Second - time.Since(paused))
	db.resume()

	// Retried with their keys until answered, the creates exist once each.
	for i := range keys {
		deadline := time.Now().Add(90 * time.Second)
		for {
			r := st.BO("POST", "/bo/documents", create(i), "Idempotency-Key", keys[i])
			if r.Status == 201 {
				break
			}
			if time.Now().After(deadline) || (r.Status != 409 && r.Status != 503) {
				t.Fatalf("retry of create %d: %d %s", i, r.Status, r.Body)
			}
			wait, _ := strconv.Atoi(r.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(wait, 1)) * time.Second)
		}
		if again := st.BO("POST", "/bo/documents", create(i), "Idempotency-Key", keys[i]); again.Status != 201 {
			t.Errorf("create %d replayed: %d, want its 201 again", i, again.Status)
		}
		if other := st.BO("POST", "/bo/documents", create(i+100), "Idempotency-Key", keys[i]); other.Status != http.StatusUnprocessableEntity {
			t.Errorf("create %d's key with another body: %d, want 422", i, other.Status)
		}
	}
	var docs []struct {
		Title string `json:"title"`
	}
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &docs)
	count := map[string]int{}
	for _, d := range docs {
		count[d.Title]++
	}
	for i := range keys {
		if n := count[fmt.Sprintf("created %d", i)]; n != 1 {
			t.Errorf("create %d, answered unknown then retried with its key: %d documents, want 1", i, n)
		}
	}
}
