// Package metrics holds this process's Prometheus metrics and serves them
// at /metrics in the Prometheus text format: the Go runtime and process
// collectors, and what other packages register here (HTTP requests in
// httpx, events in events, the outbox backlog in outbox).
//
// Names follow the OpenTelemetry semantic conventions where one exists, as
// OpenTelemetry's Prometheus exporter writes them (http.server.request.duration
// is http_server_request_duration_seconds, attributes become labels with
// underscores); the library's own carry the doclib_ prefix. The Prometheus
// client is used directly, not through the OpenTelemetry SDK: recording a
// request is one map lookup and an atomic add, with no allocation, which the
// gateway's cached reads (tens of thousands per second) can afford.
package metrics

import (
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds every metric of the process.
var Registry = func() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}()

// Counters registers a counter per combination of labels' values.
func Counters(name, help string, labels ...string) *prometheus.CounterVec {
	return promauto.With(Registry).NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Gauges registers a gauge per combination of labels' values.
func Gauges(name, help string, labels ...string) *prometheus.GaugeVec {
	return promauto.With(Registry).NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// Histograms registers a histogram with buckets per combination of labels'
// values.
func Histograms(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return promauto.With(Registry).NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}

// Path is where Register serves the metrics.
const Path = "/metrics"

// Handler serves Registry.
func Handler() http.Handler {
	return promhttp.HandlerFor(Registry, promhttp.HandlerOpts{})
}

// Register serves the metrics at GET (and HEAD, as every GET route) /metrics
// on r: a service's own port, or the gateway's admin listener (never its
// public one).
func Register(r gin.IRoutes) {
	h := Handler()
	serve := func(c *gin.Context) { h.ServeHTTP(c.Writer, c.Request) }
	r.GET(Path, serve)
	r.HEAD(Path, serve)
}
