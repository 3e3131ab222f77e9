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
	st := NewStack(t, map[string][]string{"catalog": {"TRASH_RETENTION=2s"}})
	start := time.Now()
	ids := st.seedLinks(1002, 6)
	t.Logf("seeded %d documents in %s", len(ids), time.Since(start).Round(time.Millisecond))
	v := ids[len(ids)-1]
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
		for attempt := 0; attempt < 20; attempt++ {
			r := st.BO("POST", "/bo/documents", body, "Idempotency-Key", key)
			if r.Status == 201 {
				var d docJSON
				r.JSON(st.t, &d)
				return d.ID, nil
			}
			if r.Status < 500 && r.Status != 409 {
				return "", fmt.Errorf("create %d: %d %s", i, r.Status, r.Body)
			}
			time.Sleep(200 * time.Millisecond)
		}
		return "", fmt.Errorf("create %d: no 201 after 20 attempts", i)
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
