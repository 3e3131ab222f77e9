package boclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"
)

// An id of "." or ".." never reaches the API (found by review: JoinPath
// made DELETE /bo/documents/.. a DELETE /bo), and redirects are not
// followed with the person's token.
func TestDotIDsAndRedirectsStayHome(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
		if r.URL.Path == "/bo/moved" {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	c := New(base, 5*time.Second)
	for _, p := range []string{"/bo/documents/..", "/bo/documents/./restore", "/bo/documents/../detail"} {
		_, err := c.do(context.Background(), request{method: "DELETE", path: p, token: "t"}, nil)
		var e *APIError
		if !errors.As(err, &e) || e.Status != http.StatusNotFound {
			t.Errorf("%s: %v, want a 404 without a call", p, err)
		}
	}
	_, _ = c.do(context.Background(), request{method: "POST", path: "/bo/moved", token: "t"}, nil)
	if len(got) != 1 || got[0] != "POST /bo/moved" {
		t.Errorf("calls %v, want only POST /bo/moved", got)
	}
}
