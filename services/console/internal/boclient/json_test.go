package boclient

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// HTML goes to the API as typed, not escaped to \u003c (6 bytes for 1):
// 300 KiB of tags stay about 300 KiB, under the gateway's body limit.
func TestJSONBodiesKeepHTMLAsIs(t *testing.T) {
	var size int
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		size, body = len(b), string(b)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"html":""}`))
	}))
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	content := strings.Repeat("<p>a&b</p>", 30<<10)
	if _, err := New(base, 5*time.Second).PreviewDocument(context.Background(), "t", "HTML", content); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(body, `\u003c`) || size > len(content)+100 {
		t.Errorf("a %d-byte text was sent as %d bytes (%.40q…)", len(content), size, body)
	}
}
