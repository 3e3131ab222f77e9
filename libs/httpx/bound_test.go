package httpx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

func TestBoundAnswersASlowWriteAsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	finished := make(chan struct{}, 1)
	h := Bound(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(300 * time.Millisecond)
			defer func() { finished <- struct{}{} }()
		}
		w.Header().Set("Location", "/x")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{}`))
	}), 100*time.Millisecond, func(r *http.Request) bool { return r.URL.Path == "/stream" })

	do := func(method, path string) (*httptest.ResponseRecorder, time.Duration) {
		start := time.Now()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec, time.Since(start)
	}
	rec, took := do("POST", "/slow")
	var p struct{ Code string }
	_ = json.Unmarshal(rec.Body.Bytes(), &p)
	if rec.Code != 503 || p.Code != "outcome_unknown" || rec.Header().Get("Retry-After") == "" || took > 250*time.Millisecond {
		t.Errorf("a slow write: %d %q in %s, want 503 outcome_unknown with Retry-After at the bound", rec.Code, p.Code, took)
	}
	<-finished // the handler went on to its end
	if rec, _ := do("POST", "/fast"); rec.Code != 201 || rec.Header().Get("Location") != "/x" || rec.Body.String() != "{}" {
		t.Errorf("a fast write: %d %v %q, want its own answer", rec.Code, rec.Header(), rec.Body)
	}
	for _, c := range []struct{ method, path string }{{"GET", "/slow"}, {"POST", "/stream"}} {
		if c.path == "/slow" {
			go func() { <-finished }()
		}
		if rec, _ := do(c.method, c.path); rec.Code != 201 {
			t.Errorf("%s %s: %d, want its own answer (not bounded)", c.method, c.path, rec.Code)
		}
	}
}

func TestUnless(t *testing.T) {
	e := gin.New()
	e.Use(Unless(func(r *http.Request) bool { return r.URL.Path == "/skip" }, func(c *gin.Context) {
		c.AbortWithStatus(http.StatusTeapot)
	}))
	e.POST("/skip", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	e.POST("/other", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	for path, want := range map[string]int{"/skip": 204, "/other": 418} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest("POST", path, nil))
		if rec.Code != want {
			t.Errorf("POST %s: %d, want %d", path, rec.Code, want)
		}
	}
}
