package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestGetReadsABoundedAnswer (review final-data, finding 7): an answer
// past what an archive entry may hold is an error, not read whole into
// memory; one at the limit is read.
func TestGetReadsABoundedAnswer(t *testing.T) {
	maxBody = 10
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", len(r.URL.Path)-1)))
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL, "t")
	if raw, err := c.Get(context.Background(), "/0123456789"); err != nil || len(raw) != 10 {
		t.Errorf("10 bytes: %d, %v; want them read", len(raw), err)
	}
	if _, err := c.Get(context.Background(), "/0123456789a"); err == nil || !strings.Contains(err.Error(), "over 10 bytes") {
		t.Errorf("11 bytes: %v; want an error saying over 10 bytes", err)
	}
}
