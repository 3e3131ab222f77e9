package export

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/cmd/doclib/internal/client"
)

// revisionServer answers the revision listing as the catalog does: a page
// covers limit versions below before, whichever are stored; nextBefore is
// the lowest covered while above 1 and the page held one.
func revisionServer(t *testing.T, stored map[int64]bool, asked *[]string) *client.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*asked = append(*asked, r.URL.RawQuery)
		before, _ := strconv.ParseInt(r.URL.Query().Get("before"), 10, 64)
		limit, _ := strconv.ParseInt(r.URL.Query().Get("limit"), 10, 64)
		page := struct {
			Revisions  []json.RawMessage `json:"revisions"`
			NextBefore int64             `json:"nextBefore,omitempty"`
		}{Revisions: []json.RawMessage{}}
		for v := before - 1; v >= 1 && v >= before-limit; v-- {
			if stored[v] {
				page.Revisions = append(page.Revisions, json.RawMessage(fmt.Sprintf(`{"version":%d}`, v)))
			}
		}
		if low := before - limit; low > 1 && len(page.Revisions) > 0 {
			page.NextBefore = low
		}
		_ = json.NewEncoder(w).Encode(page)
	}))
	t.Cleanup(srv.Close)
	return client.New(srv.URL, "t")
}

func versionsUpTo(n int64, except ...int64) map[int64]bool {
	out := map[int64]bool{}
	for v := int64(1); v <= n; v++ {
		out[v] = true
	}
	for _, v := range except {
		delete(out, v)
	}
	return out
}

// TestRevisionsAreConsecutive (review finding 1; review final-data,
// finding 1): the exporter takes the revisions of a document only if the
// newest is its version and they run down; a gap below it (age retention)
// is kept as it is; a missing newest is an error naming the entry.
func TestRevisionsAreConsecutive(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		version int64
		stored  map[int64]bool
		want    int    // revisions exported
		err     string // or the error
	}{
		{"every revision, three pages", 120, versionsUpTo(120), 120, ""},
		{"the oldest removed by retention", 120, versionsUpTo(120, 1, 2, 3), 117, ""},
		{"a gap left by age retention", 120, versionsUpTo(120, 60, 61, 100), 117, ""},
		{"the newest not stored", 120, versionsUpTo(120, 120), 0, "revision 119 first where 120"},
		{"none stored", 120, map[int64]bool{}, 0, "listed none, revision 120 due"},
		{"newer than the detail read", 100, versionsUpTo(101), 100, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked []string
			e := &Exporter{c: revisionServer(t, c.stored, &asked), retryWait: time.Millisecond}
			revs, err := e.revisions(context.Background(), "d1", c.version)
			switch {
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "documents/d1.json")):
				t.Errorf("got %d revisions, error %v; want an error naming documents/d1.json: %s", len(revs), err, c.err)
			case c.err == "" && (err != nil || len(revs) != c.want):
				t.Errorf("got %d revisions, error %v; want %d", len(revs), err, c.want)
			case c.err == "" && revisionVersion(revs[0]) > revisionVersion(revs[len(revs)-1]):
				t.Errorf("revisions not oldest first")
			}
			if !strings.Contains(asked[0], "before="+strconv.FormatInt(c.version+1, 10)) {
				t.Errorf("first page asked %q; want it to start at the document's version", asked[0])
			}
		})
	}
}

// TestRevisionsRunDown: a repeated or rising version is refused.
func TestRevisionsRunDown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ v, prev, version int64 }{{5, 5, 9}, {6, 5, 9}, {0, 5, 9}, {8, 10, 9}} {
		if err := nextRevision(c.v, c.prev, c.version); err == nil {
			t.Errorf("revision %d after %d (version %d) accepted", c.v, c.prev, c.version)
		}
	}
	for _, c := range []struct{ v, prev, version int64 }{{9, 10, 9}, {3, 9, 9}, {1, 2, 9}} {
		if err := nextRevision(c.v, c.prev, c.version); err != nil {
			t.Errorf("revision %d after %d (version %d): %v", c.v, c.prev, c.version, err)
		}
	}
}

// TestRevisionsStopPastAnEntry (review finding 6): a history past what an
// entry may hold fails naming the document once its bytes read pass the
// limit, not after every page is held.
func TestRevisionsStopPastAnEntry(t *testing.T) {
	t.Parallel()
	var asked []string
	e := &Exporter{c: revisionServer(t, versionsUpTo(120), &asked), entryLimit: 20 * len(`{"version":100}`)}
	_, err := e.revisions(context.Background(), "d1", 120)
	if err == nil || !strings.Contains(err.Error(), "documents/d1.json") {
		t.Fatalf("a history over the entry limit: %v; want an error naming documents/d1.json", err)
	}
	if len(asked) != 2 {
		t.Errorf("%d pages read; want 2 (the limit is passed in the second)", len(asked))
	}
}

// TestTheNewestIsListedAgain (review final-data, finding 3): a history
// listed without its newest revision (its store failed a moment) is
// listed once more after a short wait before the export fails.
func TestTheNewestIsListedAgain(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		revs := `{"version":2},{"version":1}`
		if calls.Add(1) > 1 {
			revs = `{"version":3},` + revs
		}
		_, _ = fmt.Fprintf(w, `{"revisions":[%s]}`, revs)
	}))
	t.Cleanup(srv.Close)
	e := &Exporter{c: client.New(srv.URL, "t"), retryWait: time.Millisecond}
	revs, err := e.revisions(context.Background(), "d1", 3)
	if err != nil || len(revs) != 3 || calls.Load() != 2 {
		t.Errorf("got %d revisions in %d listings, error %v; want 3 in 2", len(revs), calls.Load(), err)
	}
}
