package httpapi_test

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// A live stream sets its own read and write deadlines (the listener's are
// for whole requests): every writer the engine wraps the answer in lets
// http.ResponseController reach the connection.
func TestLiveStreamsControlTheirDeadlines(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 4)
	h := start(t, options{changes: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rc := http.NewResponseController(w)
		errs <- rc.SetReadDeadline(time.Time{})
		errs <- rc.SetWriteDeadline(time.Now().Add(time.Minute))
		w.WriteHeader(http.StatusOK)
	})})
	for _, url := range []string{h.publicURL + "/public/changes", h.url + "/bo/changes"} {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", bearerOf(viewerToken))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("GET %s: %d", url, res.StatusCode)
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Errorf("GET %s: the stream cannot set its deadline: %v", url, err)
			}
		}
	}
}
