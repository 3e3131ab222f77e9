package e2e

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAFirstSyncSpanningAPurgeIsNotExpired (issue 21, item 11): with more
// than 1,000 documents, delete V, take the first page's cursor (V is not
// in it), let V be purged: that cursor answers the next page, not 410,
// since its client never held V.
func TestAFirstSyncSpanningAPurgeIsNotExpired(t *testing.T) {
	// V is purged 5 to 10 s after its deletion (the purge runs every
	// TRASH_RETENTION): time enough to take the first page before, which
	// the test checks.
	st := NewStack(t, map[string][]string{"catalog": {"TRASH_RETENTION=5s"}})
	start := time.Now()
	ids := st.seedLinks(1001, 6)
	// V last, without an Idempotency-Key: a purged document created under
	// a live key keeps its tombstone while the key lives (the key's retry
	// must find it), so the sweep, and the horizon, would pass it only then.
	var vd docJSON
	st.Must("POST", "/bo/documents", `{"type":"LINK","title":"V","url":"https://x.org/v"}`, 201).JSON(t, &vd)
	v := vd.ID
	ids = append(ids, v)
	t.Logf("seeded %d documents in %s", len(ids), time.Since(start).Round(time.Millisecond))
	// A client that synced everything holds V: its cursor is the control,
	// 410 once V is purged.
	holder := st.syncAll()
	st.Must("DELETE", "/bo/documents/"+v, nil, 204)

	first, r := st.sync("")
	if r.Status != 200 || !first.HasMore || len(first.Documents) != 1000 {
		t.Fatalf("first page: %d, %d documents, hasMore %v; want 200, 1000, true", r.Status, len(first.Documents), first.HasMore)
	}
	for _, d := range first.Documents {
		if d.ID == v {
			t.Fatalf("the first page holds the deleted document %s", v)
		}
	}
	// Else the test proves nothing: the first page would be taken after
	// the purge.
	var detail docJSON
	if r := st.BO("GET", "/bo/documents/"+v+"/detail", nil); r.Status != 200 {
		t.Fatalf("V right after the first page: %d %s; want 200, deleted but not purged yet", r.Status, r.Body)
	} else if r.JSON(t, &detail); detail.IsDeleted == nil || !*detail.IsDeleted {
		t.Fatalf("V right after the first page: %s; want isDeleted", r.Body)
	}
	Eventually(t, 20*time.Second, "the deleted document is purged", func() bool {
		return st.BO("GET", "/bo/documents/"+v+"/detail", nil).Status == 404
	})
	Eventually(t, 5*time.Second, "the purge's event is published", func() bool {
		return st.logs.Contains("library.catalog.document.purged")
	})
	Eventually(t, 20*time.Second, "the cursor of a client that held V expires", func() bool {
		_, r := st.sync(holder)
		return r.Status == 410
	})
	t.Logf("purged, and the holder's cursor expired, %s after the seeding began", time.Since(start).Round(time.Millisecond))
	next, r := st.sync(first.Cursor)
	if r.Status != 200 {
		t.Fatalf("the first page's cursor after the purge: %d %s; want 200 (the client never held %s)", r.Status, r.Body, v)
	}
	if got := len(first.Documents) + len(next.Documents); got != len(ids)-1 || next.HasMore {
		t.Errorf("the first sync holds %d documents (hasMore %v), want %d", got, next.HasMore, len(ids)-1)
	}
}

// syncAll runs a first sync to its end and returns its last cursor.
func (st *Stack) syncAll() string {
	st.t.Helper()
	cursor := ""
	for pages := 0; pages < 100; pages++ {
		p, r := st.sync(cursor)
		if r.Status != 200 {
			st.t.Fatalf("sync: %d %s", r.Status, r.Body)
		}
		if cursor = p.Cursor; !p.HasMore {
			return cursor
		}
	}
	st.t.Fatal("no end to the first sync after 100 pages")
	return ""
}

// seedLinks creates n LINK documents through the gateway with workers
// concurrent clients and returns their ids in the order created (the last
// one alone, after every other).
func (st *Stack) seedLinks(n, workers int) []string {
	st.t.Helper()
	create := func(i int) (string, error) {
		body := fmt.Sprintf(`{"type":"LINK","title":"seeded %d","url":"https://x.org/%d"}`, i, i)
		key := fmt.Sprintf("seed-%d-%d", time.Now().UnixNano(), i)
		// Under load a create may answer 503 (unavailable, or its outcome
		// unknown) or 409 (its key's first attempt still running): the
		// same key then gets the first answer, or runs anew.
		var last Response
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
			last = st.BO("POST", "/bo/documents", body, "Idempotency-Key", key)
			if last.Status == 201 {
				var d docJSON
				last.JSON(st.t, &d)
				return d.ID, nil
			}
			if last.Status < 500 && last.Status != 409 {
				return "", fmt.Errorf("create %d: %d %s", i, last.Status, last.Body)
			}
			time.Sleep(500 * time.Millisecond)
		}
		return "", fmt.Errorf("create %d: no 201 within 90 s; last %d %s", i, last.Status, last.Body)
	}
	ids := make([]string, n)
	// The first write creates the catalog's sequence counter: alone.
	var err error
	if ids[0], err = create(0); err != nil {
		st.t.Fatal(err)
	}
	var next atomic.Int64
	next.Store(1)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n-1; i = int(next.Add(1)) - 1 {
				id, err := create(i)
				if err != nil {
					errs <- err
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		st.t.Fatal(err)
	}
	if ids[n-1], err = create(n - 1); err != nil {
		st.t.Fatal(err)
	}
	return ids
}
