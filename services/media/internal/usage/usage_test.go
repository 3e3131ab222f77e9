package usage_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/doclib/services/media/internal/usage"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		status     int
		wantErr    bool
		inUse      bool
		docs       int
	}{
		{"in use", `{"inUse":true,"documentIds":["d1","d2"]}`, 200, false, true, 2},
		{"free", `{"inUse":false,"documentIds":[]}`, 200, false, false, 0},
		{"free without list", `{"inUse":false}`, 200, false, false, 0},
		{"server error", `{}`, 500, true, false, 0},
		{"unknown route", `not found`, 404, true, false, 0},
		{"not JSON", `<html>`, 200, true, false, 0},
		{"no inUse", `{"documentIds":[]}`, 200, true, false, 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/base/internal/media-usage/m%2F1" && r.URL.RawPath != "/base/internal/media-usage/m%2F1" {
				t.Errorf("%s: path %q (raw %q), want the escaped id under the base path", c.name, r.URL.Path, r.URL.RawPath)
			}
			w.WriteHeader(c.status)
			_, _ = w.Write([]byte(c.body))
		}))
		base, _ := url.Parse(srv.URL + "/base")
		u, err := usage.New(base).Usage(context.Background(), "m/1")
		srv.Close()
		if (err != nil) != c.wantErr || u.InUse != c.inUse || len(u.DocumentIDs) != c.docs {
			t.Errorf("%s: %+v, %v; want error %v, inUse %v, %d documents", c.name, u, err, c.wantErr, c.inUse, c.docs)
		}
		if err == nil && u.DocumentIDs == nil {
			t.Errorf("%s: DocumentIDs is nil, want []", c.name)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	base, _ := url.Parse(srv.URL)
	if _, err := usage.New(base).Usage(context.Background(), "x"); err == nil {
		t.Error("an unreachable catalog gave no error")
	}
}
