package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/testkit"
)

// Replica starts another process of service s on the stack's database and
// returns its base URL; it stops with the test.
func (st *Stack) Replica(s string) string {
	st.t.Helper()
	_, base := serveOnFreePort(st.t, 60*time.Second, "/readyz", func(addr string) (*devserver.Process, error) {
		env := append(append([]string(nil), st.env[s]...), "HTTP_ADDR="+addr)
		return devserver.Start(s+"-2", filepath.Join(binDir, s), nil, env, prefix(st.logs, s+"-2"))
	})
	return base
}

// serveOnFreePort runs start on a free loopback address and waits until
// path answers 200 there; when another process took the port first, it
// starts again on a new one. The process stops with t.
func serveOnFreePort(t testing.TB, wait time.Duration, path string, start func(addr string) (*devserver.Process, error)) (*devserver.Process, string) {
	t.Helper()
	for try := 1; ; try++ {
		addr, err := devserver.FreeAddr()
		testkit.Must(t, err, "free port")
		p, err := start(addr)
		testkit.Must(t, err, "start")
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err = devserver.WaitHTTP(ctx, p, "http://"+addr+path)
		cancel()
		if err == nil {
			t.Cleanup(p.Stop)
			return p, "http://" + addr
		}
		p.Stop()
		if !errors.Is(err, devserver.ErrAddrTaken) || try == 3 {
			testkit.Must(t, err, p.Name+" ready")
		}
	}
}

// splitBalancer stands for a Kubernetes Service in front of two replicas,
// in the worst order for read-your-writes: every write goes to writes,
// every read to reads.
func splitBalancer(t testing.TB, writes, reads string) string {
	t.Helper()
	w, _ := url.Parse(writes)
	r, _ := url.Parse(reads)
	lb := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		if pr.In.Method == http.MethodGet || pr.In.Method == http.MethodHead {
			pr.SetURL(r)
		} else {
			pr.SetURL(w)
		}
	}})
	t.Cleanup(lb.Close)
	return lb.URL
}

// A back-office author reads their own write at once through the gateway
// they wrote through, on the public side too (README, Decisions, Reads),
// however many replicas each service has: here the write goes to one
// replica and every read to another, which has just rendered the answer
// before the write.
func TestAuthorReadsOwnWriteThroughOtherServiceReplicas(t *testing.T) {
	t.Parallel()
	st := NewStack(t, map[string][]string{"gateway": {"PUBLIC_RATE_LIMIT=0"}})
	for _, s := range []string{"taxonomy", "catalog", "media"} {
		st.SetEnv("gateway", strings.ToUpper(s)+"_URL="+splitBalancer(t, st.ServiceURL(s), st.Replica(s)))
	}
	st.Stop("gateway")
	st.Start("gateway")
	st.Must("POST", "/bo/tags-categories", `{"id":"health","name":"Santé"}`, 201)
	var doc struct{ ID string }
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "v0", "url": "https://example.org", "tagsIds": []string{}}, 201).JSON(t, &doc)

	for i := 1; i <= 5; i++ {
		// The listing and the categories as the public app reads them, so
		// that the gateway and the read replicas hold them.
		st.Req("GET", "/public/documents", nil, "Accept-Encoding", "identity")
		st.Req("GET", "/public/tags-categories", nil, "Accept-Encoding", "identity")

		title := fmt.Sprintf("v%d", i)
		st.Must("PATCH", "/bo/documents/"+doc.ID, map[string]any{"type": "LINK", "title": title, "url": "https://example.org", "tagsIds": []string{}}, 200)
		if r := st.Req("GET", "/public/documents", nil, "Accept-Encoding", "identity"); !strings.Contains(string(r.Body), `"title":"`+title+`"`) {
			t.Errorf("round %d: the public listing right after the author's PATCH through this gateway: %s; want title %s", i, r.Body, title)
		}

		name := fmt.Sprintf("Santé %d", i)
		st.Must("PATCH", "/bo/tags-categories/health", map[string]any{"name": name}, 200)
		if r := st.Req("GET", "/public/tags-categories", nil, "Accept-Encoding", "identity"); !strings.Contains(string(r.Body), `"name":"`+name+`"`) {
			t.Errorf("round %d: the public categories right after the author's rename through this gateway: %s; want %s", i, r.Body, name)
		}

		id := st.Upload(fmt.Sprintf("guide-%d.pdf", i), append(append([]byte(nil), pdfBytes...), fmt.Sprintf("%d", i)...))
		if r := st.Req("GET", "/public/medias/"+id, nil, "Accept-Encoding", "identity"); r.Status != 200 {
			t.Errorf("round %d: the media just uploaded: %d", i, r.Status)
		}
		st.Must("DELETE", "/bo/medias/"+id, nil, 204)
		if r := st.Req("GET", "/public/medias/"+id, nil, "Accept-Encoding", "identity"); r.Status != 404 {
			t.Errorf("round %d: the media right after the author deleted it through this gateway: %d %s; want 404", i, r.Status, r.Body)
		}
	}
}
