package httpx

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

// accessLines are the access-log records in logs, decoded.
func accessLines(t *testing.T, logs *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == "request" {
			out = append(out, m)
		}
	}
	return out
}

// At the default level (info) the access log costs a public read nothing
// under load: successful public reads are logged at most readsPerSecond a
// second, the next line counting those left out; every error, every
// back-office request, every write and every slow request is logged. At
// debug every request is.
func TestAccessLogSamplesSuccessfulPublicReadsAtInfo(t *testing.T) {
	var logs bytes.Buffer
	e := NewEngine("test", slog.New(slog.NewJSONHandler(&logs, nil)))
	e.GET("/public/documents", func(c *gin.Context) { c.Status(http.StatusOK) })
	e.GET("/public/missing", func(c *gin.Context) { c.Status(http.StatusNotFound) })
	e.GET("/public/failing", func(c *gin.Context) { c.Status(http.StatusBadGateway) })
	e.GET("/public/slow", func(c *gin.Context) { time.Sleep(slowRequest); c.Status(http.StatusOK) })
	e.GET("/bo/documents", func(c *gin.Context) { c.Status(http.StatusOK) })
	e.POST("/public/things", func(c *gin.Context) { c.Status(http.StatusCreated) })
	serve := func(method, path string, n int) {
		for range n {
			e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
		}
	}

	serve("GET", "/public/documents", 1000)
	reads := accessLines(t, &logs)
	if len(reads) == 0 || len(reads) > 2*readsPerSecond {
		t.Fatalf("1000 successful public reads at once: %d access-log lines, want 1 to %d (sampled)", len(reads), 2*readsPerSecond)
	}
	logs.Reset()
	serve("GET", "/public/missing", 50)
	serve("GET", "/public/failing", 50)
	serve("GET", "/bo/documents", 50)
	serve("POST", "/public/things", 50)
	serve("GET", "/public/slow", 1)
	got := map[string]int{}
	for _, l := range accessLines(t, &logs) {
		got[l["route"].(string)]++
	}
	for _, route := range []string{"/public/missing", "/public/failing", "/bo/documents", "/public/things"} {
		if got[route] != 50 {
			t.Errorf("%s: %d lines for 50 requests, want every one logged", route, got[route])
		}
	}
	if got["/public/slow"] != 1 {
		t.Errorf("a slow public read: %d lines, want it logged", got["/public/slow"])
	}

	// Each sampled line says how many successful public reads were left
	// out since the line before it: the lines and their counts add up to
	// every read.
	time.Sleep(time.Second)
	logs.Reset()
	serve("GET", "/public/documents", 1)
	reads = append(reads, accessLines(t, &logs)...)
	total := len(reads)
	for _, l := range reads {
		if n, ok := l["reads_unlogged"].(float64); ok {
			total += int(n)
		}
	}
	if total != 1001 {
		t.Errorf("%d sampled lines whose reads_unlogged add up to %d reads, want 1001", len(reads), total)
	}

	logs.Reset()
	debug := NewEngine("test", slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	debug.GET("/public/documents", func(c *gin.Context) { c.Status(http.StatusOK) })
	for range 100 {
		debug.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/public/documents", nil))
	}
	if n := len(accessLines(t, &logs)); n != 100 {
		t.Errorf("100 public reads at debug level: %d lines, want every one logged", n)
	}
}
