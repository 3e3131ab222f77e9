package httpx

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

func TestReadiness(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("down") }
	tests := []struct {
		name     string
		required map[string]Check
		reported map[string]Check
		drain    bool
		want     int
		status   string
	}{
		{"no checks", nil, nil, false, http.StatusOK, "ready"},
		{"all ok", map[string]Check{"db": ok}, map[string]Check{"bus": ok}, false, http.StatusOK, "ready"},
		{"a reported dependency down", map[string]Check{"db": ok}, map[string]Check{"bus": down}, false, http.StatusOK, "degraded"},
		{"a required dependency down", map[string]Check{"db": down}, map[string]Check{"bus": ok}, false, http.StatusServiceUnavailable, "unready"},
		{"draining", map[string]Check{"db": ok}, nil, true, http.StatusServiceUnavailable, "draining"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := NewHealth(tt.required).Report(tt.reported)
			if tt.drain {
				h.Drain()
			}
			e := gin.New()
			h.Register(e)
			w := httptest.NewRecorder()
			e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			var body struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", w.Body, err)
			}
			if w.Code != tt.want || body.Status != tt.status {
				t.Errorf("/readyz = %d %q, want %d %q", w.Code, body.Status, tt.want, tt.status)
			}
			if len(body.Checks) != len(tt.required)+len(tt.reported) {
				t.Errorf("checks %v: want every required and reported check named", body.Checks)
			}
			if w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", w.Header().Get("Cache-Control"))
			}
		})
	}
}

// The probes answer HEAD as every GET route does (CONTRACT.md §7): some
// load balancers probe with HEAD.
func TestProbesAnswerHead(t *testing.T) {
	t.Parallel()
	e := gin.New()
	NewHealth(nil).Register(e)
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	for _, path := range []string{"/healthz", "/readyz"} {
		res, err := srv.Client().Head(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") == "" {
			t.Errorf("HEAD %s: %d %v, want 200 with GET's headers", path, res.StatusCode, res.Header)
		}
	}
}
