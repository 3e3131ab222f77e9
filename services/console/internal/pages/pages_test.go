package pages

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
)

// The static files are served, their directories never listed.
func TestStaticFilesAreNotListed(t *testing.T) {
	t.Parallel()
	p, err := New(Config{Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	p.Register(r)
	for path, want := range map[string]int{
		"/console/static/console.js": http.StatusOK,
		"/console/static/":           http.StatusNotFound,
		"/console/static/nope.js":    http.StatusNotFound,
	} {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != want {
			t.Errorf("GET %s = %d %.80q, want %d", path, rec.Code, rec.Body.String(), want)
		}
	}
}
