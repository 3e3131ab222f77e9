package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			w.WriteHeader(http.StatusOK)
		case "/slow":
			time.Sleep(200 * time.Millisecond)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := get(srv.URL+"/readyz", time.Second); err != nil {
		t.Errorf("a 200: %v", err)
	}
	if err := get(srv.URL+"/down", time.Second); err == nil {
		t.Error("a 503 passed")
	}
	if err := get(srv.URL+"/slow", 50*time.Millisecond); err == nil {
		t.Error("an answer after the timeout passed")
	}
	if err := get("http://127.0.0.1:1/readyz", time.Second); err == nil {
		t.Error("a refused connection passed")
	}
}
