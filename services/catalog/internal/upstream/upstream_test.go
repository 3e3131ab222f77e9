package upstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/upstream"
)

// A stand-in taxonomy: every asked id exists; it refuses more than 500
// ids, as the real one does.
func taxonomy(t *testing.T, calls *atomic.Int32, createdAt string) *url.URL {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		ids := r.URL.Query()["ids"]
		if len(ids) > 500 {
			http.Error(w, "at most 500 ids per lookup", http.StatusBadRequest)
			return
		}
		out := make([]map[string]string, len(ids))
		for i, id := range ids {
			out[i] = map[string]string{"id": id, "createdAt": createdAt}
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

func TestTagsAsksInChunks(t *testing.T) {
	var calls atomic.Int32
	c := upstream.New(taxonomy(t, &calls, "2026-11-22T10:00:00.000Z"), nil)
	ids := make([]string, 1201)
	for i := range ids {
		ids[i] = fmt.Sprint("t", i%1200) // one duplicate
	}
	got, err := c.Tags(context.Background(), ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1200 || calls.Load() != 3 || got["t0"].IsZero() {
		t.Errorf("%d tags in %d lookups, t0 created %v; want 1200 in 3, with its time", len(got), calls.Load(), got["t0"])
	}
}

func TestTagsOfAnOlderTaxonomy(t *testing.T) {
	var calls atomic.Int32
	c := upstream.New(taxonomy(t, &calls, ""), nil)
	got, err := c.Tags(context.Background(), []string{"a"})
	if err != nil {
		t.Fatal(err)
	}
	if at, ok := got["a"]; !ok || !at.IsZero() {
		t.Errorf("tags of a taxonomy that gives no createdAt = %v, want a with a zero time", got)
	}
}

func TestARefusedLookupIsNotAnOutage(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusBadRequest)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	_, err := upstream.New(u, u).Medias(context.Background(), []string{"m"})
	var unavailable *document.UnavailableError
	if err == nil || errors.As(err, &unavailable) {
		t.Errorf("a 400 answer gave %v, want an ordinary error", err)
	}
	srv.Close()
	_, err = upstream.New(u, u).Medias(context.Background(), []string{"m"})
	if !errors.As(err, &unavailable) {
		t.Errorf("no answer gave %v, want *UnavailableError", err)
	}
}
