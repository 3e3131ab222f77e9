//go:build linux

package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// TestAPreviewStopsWhenItsClientLeaves: a client that leaves while its
// preview (1 MiB of ordinary Markdown or HTML, a second of work or more)
// is rendered leaves no work behind: the handler has returned within
// stopWithin, and the process is idle again. (A text whose reading grows
// faster than its length is refused before it is read: see
// TestAPreviewTooDenseInMarkupIsRefusedAtOnce.)
func TestAPreviewStopsWhenItsClientLeaves(t *testing.T) {
	gin.SetMode(gin.TestMode)
	for _, tc := range []struct{ typ, unit string }{
		{"HTML", `<p>Some <a href="https://example.org/page">link</a>, <b>bold</b> and <i>more</i> words.</p>`},
		{"MARKDOWN", "Some *emphasis*, a [link](https://example.org/page) and `code`, then **more** words of an article.\n\n"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			previewAndLeave(t, tc.typ, strings.Repeat(tc.unit, (1<<20)/len(tc.unit)))
		})
	}
}

// stopWithin is how soon a preview whose client left has stopped: the
// work between two checks of its context (16 KiB of HTML, one Markdown
// paragraph) is milliseconds; reading and decoding the body, which may
// still be under way when the client leaves, takes most of it under the
// race detector.
const stopWithin = time.Second

func previewAndLeave(t *testing.T, typ, content string) {
	h := &Handler{previews: newPreviewSlots()}
	returned := make(chan time.Time, 1)
	engine := gin.New()
	engine.POST(PreviewPath, func(c *gin.Context) {
		h.preview(c)
		returned <- time.Now()
	})
	srv := httptest.NewServer(engine)
	defer srv.Close()
	body, err := json.Marshal(map[string]string{"type": typ, "content": content})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+PreviewPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	time.AfterFunc(100*time.Millisecond, cancel)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the preview answered %d before its client left: make its text longer", resp.StatusCode)
	}
	left := time.Now()
	select {
	case at := <-returned:
		if took := at.Sub(left); took > stopWithin {
			t.Fatalf("the handler returned %v after its client left, want at most %v", took, stopWithin)
		}
	case <-time.After(2 * stopWithin):
		t.Fatalf("the preview was still being rendered %v after its client left", 2*stopWithin)
	}
	before := cpuTime(t)
	time.Sleep(500 * time.Millisecond)
	if used := cpuTime(t) - before; used > 150*time.Millisecond {
		t.Errorf("the process used %v of CPU in the 500 ms after the handler returned, want it idle", used)
	}
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
