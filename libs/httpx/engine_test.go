package httpx

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/doclib/libs/metrics"
)

// Without an exporter no span is made, but an inbound trace context still
// reaches the handler's context (for its logs and the calls it makes), and
// the access log is written at info level.
func TestEngineCarriesTraceContextWithoutTelemetry(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	var logs bytes.Buffer
	e := NewEngine("test", slog.New(slog.NewJSONHandler(&logs, nil)))
	var got trace.SpanContext
	e.GET("/x", func(c *gin.Context) {
		got = trace.SpanContextFromContext(c.Request.Context())
		c.Status(http.StatusNoContent)
	})

	r := httptest.NewRequest("GET", "/x", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	if w.Code != http.StatusNoContent || got.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !got.IsRemote() {
		t.Errorf("status %d, span context %v: want the inbound trace", w.Code, got)
	}
	if !strings.Contains(logs.String(), `"route":"/x"`) || w.Header().Get(RequestIDHeader) == "" {
		t.Errorf("access log %q, request id %q", logs.String(), w.Header().Get(RequestIDHeader))
	}

	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	if got.IsValid() {
		t.Errorf("no traceparent: span context %v, want none", got)
	}
	logs.Reset()
	quiet := NewEngine("test", slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	quiet.GET("/x", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	quiet.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/x", nil))
	if logs.Len() != 0 {
		t.Errorf("access log at warn level: %q", logs.String())
	}
}

// Requests are counted by method, route pattern and status, under the
// OpenTelemetry HTTP names; probes are not; /metrics serves them.
func TestRequestMetrics(t *testing.T) {
	e := NewEngine("test", slog.New(slog.DiscardHandler))
	NewHealth(nil).Register(e)
	metrics.Register(e)
	e.GET("/metrics-test/:id", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	e.GET("/metrics-test-panic", func(c *gin.Context) { panic("boom") })
	for _, r := range []struct{ method, path string }{
		{"GET", "/metrics-test/a"}, {"GET", "/metrics-test/b"}, {"POST", "/metrics-test/a"},
		{"BREW", "/metrics-test/a"}, {"GET", "/metrics-test-panic"}, {"GET", "/readyz"}, {"GET", "/healthz"},
		{"GET", "/no/such/path/1"}, {"GET", "/no/such/path/2"}, // unknown paths: one series, no path in it
	} {
		e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(r.method, r.path, nil))
	}

	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	out := w.Body.String()
	for _, want := range []string{
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="204",http_route="/metrics-test/:id"} 2`,
		`http_server_request_duration_seconds_count{http_request_method="POST",http_response_status_code="405",http_route=""} 1`,
		`http_server_request_duration_seconds_count{http_request_method="_OTHER",http_response_status_code="405",http_route=""} 1`,
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="500",http_route="/metrics-test-panic"} 1`,
		`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="404",http_route=""} 2`,
		`http_server_request_duration_seconds_bucket{http_request_method="GET",http_response_status_code="204",http_route="/metrics-test/:id",le="0.005"}`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, probe := range []string{`http_route="/readyz"`, `http_route="/healthz"`, `http_route="/metrics"`, `/no/such/path`} {
		if strings.Contains(out, probe) {
			t.Errorf("/metrics has a series with %s (probes and request paths never make one)", probe)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", out)
	}
}

func BenchmarkMeasure(b *testing.B) {
	e := gin.New()
	e.Use(measure)
	e.GET("/x/:id", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	r := httptest.NewRequest("GET", "/x/1", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		e.ServeHTTP(w, r)
	}
}

// An idle system keeps revalidating (the catalog asks taxonomy for the tag
// categories every 10 s, answered 304): at info, a 304 writes no line, so
// an idle terminal stays quiet; a 200 does.
func TestARevalidationIsLoggedAtDebugOnly(t *testing.T) {
	var logs bytes.Buffer
	e := NewEngine("test", slog.New(slog.NewJSONHandler(&logs, nil)))
	e.GET("/x", func(c *gin.Context) { c.Status(http.StatusNotModified) })
	e.GET("/y", func(c *gin.Context) { c.Status(http.StatusOK) })
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/x", nil))
	if logs.Len() != 0 {
		t.Errorf("a 304 logged at info: %s", logs.String())
	}
	e.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/y", nil))
	if !strings.Contains(logs.String(), `"status":200`) {
		t.Errorf("a 200 not logged at info: %q", logs.String())
	}
}
