package e2e

import (
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestAServiceWhosePortWasTakenMoves: another process took taxonomy's port
// between FreeAddr and its bind, and answers /readyz there (make test at
// 24741de: the stack took that server for taxonomy, and the first POST
// /bo/tags-categories got its 404). Taxonomy moves to a new port, the
// services calling it learn the new address, and the library works.
func TestAServiceWhosePortWasTakenMoves(t *testing.T) {
	st := NewStack(t, nil)
	old := st.addrs["taxonomy"]
	st.Stop("taxonomy")
	takePort(t, old)
	st.Start("taxonomy")
	if st.addrs["taxonomy"] == old {
		t.Fatal("taxonomy kept the port another process holds")
	}
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "moved", "name": "Moved"}, 201)
	st.Must("POST", "/bo/tags", map[string]string{"id": "moved-t", "name": "Tag", "categoryId": "moved"}, 201)
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Moved", "url": "https://example.org/m",
		"tagsIds": []string{"moved-t"}}, 201)

	// The gateway's second address, its admin listener, taken: it moves,
	// and the console (which calls /bo there) restarts with it.
	oldAdmin := st.AdminURL
	st.Stop("gateway")
	takePort(t, strings.TrimPrefix(oldAdmin, "http://"))
	st.Start("gateway")
	if st.AdminURL == oldAdmin {
		t.Fatal("the gateway kept the admin port another process holds")
	}
	st.Must("GET", "/bo/me", nil, 200)
	c := consoleClient(t, st, Token)
	if res, err := c.Get(st.AdminURL + "/console/"); err != nil || res.StatusCode != 200 {
		t.Fatalf("the console after the gateway moved: %v %v", res, err)
	}
}

// takePort serves on addr, answering /readyz 200 as a doclib service of
// another test would, until the test ends.
func takePort(t *testing.T, addr string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("take the port %s: %v", addr, err)
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
		}
	})}
	go func() { _ = other.Serve(l) }()
	t.Cleanup(func() { other.Close() })
}
