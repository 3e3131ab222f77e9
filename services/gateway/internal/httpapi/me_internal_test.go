package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestMeWithoutCaller: GET /bo/me reached without an authenticated caller
// (a wiring mistake) is a 500, not a 200 naming nobody.
func TestMeWithoutCaller(t *testing.T) {
	t.Parallel()
	w := httptest.NewRecorder()
	whoAmI(w, httptest.NewRequest("GET", "/bo/me", nil))
	if w.Code != http.StatusInternalServerError {
		t.Errorf("no caller: %d %s, want 500", w.Code, w.Body)
	}
}
