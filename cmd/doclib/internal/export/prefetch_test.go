package export

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/cmd/doclib/internal/client"
)

// The read-ahead holds at most workers documents not yet taken, and hands
// them over in the listing's order.
func TestPrefetchIsBoundedAndInOrder(t *testing.T) {
	var details atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.Split(strings.TrimPrefix(r.URL.Path, "/bo/documents/"), "/")[0]
		switch {
		case strings.HasSuffix(r.URL.Path, "/detail"):
			details.Add(1)
			fmt.Fprintf(w, `{"id":%q,"version":1}`, id)
		case strings.HasSuffix(r.URL.Path, "/revisions"):
			fmt.Fprint(w, `{"revisions":[{"version":1}]}`)
		default: // one revision
			fmt.Fprintf(w, `{"id":%q,"version":1}`, id)
		}
	}))
	defer srv.Close()
	e := &Exporter{c: client.New(srv.URL, "t")}
	ids := make([]string, 20)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%02d", i)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := e.startPrefetch(ctx, ids, 3)
	time.Sleep(200 * time.Millisecond)
	if n := details.Load(); n != 3 {
		t.Fatalf("%d documents read before any was taken, want 3", n)
	}
	for i, id := range ids {
		f, err := p.take(ctx, i)
		if err != nil || f.err != nil {
			t.Fatal(err, f.err)
		}
		if f.refs.ID != id || len(f.revs) != 1 {
			t.Fatalf("take(%d) = %s with %d revisions, want %s with 1", i, f.refs.ID, len(f.revs), id)
		}
	}
}
