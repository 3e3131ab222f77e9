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
