package httpx

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/metrics"
)

// requestDuration is OpenTelemetry's http.server.request.duration, with its
// attributes http.request.method, http.route (the route's pattern, empty
// when no route matched) and http.response.status_code, and its advised
// buckets.
var requestDuration = metrics.Histograms("http_server_request_duration_seconds",
	"Duration of HTTP server requests (OpenTelemetry http.server.request.duration); its _count is the request count.",
	[]float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10},
	"http_request_method", "http_route", "http_response_status_code")

// knownMethods keeps the method label bounded: any other method is _OTHER,
// as the semantic conventions say.
var knownMethods = map[string]string{
	http.MethodGet: http.MethodGet, http.MethodHead: http.MethodHead, http.MethodPost: http.MethodPost,
	http.MethodPut: http.MethodPut, http.MethodPatch: http.MethodPatch, http.MethodDelete: http.MethodDelete,
	http.MethodOptions: http.MethodOptions, http.MethodConnect: http.MethodConnect, http.MethodTrace: http.MethodTrace,
}

// statusLabels holds the label of every valid status code, so recording a
// request allocates nothing.
var statusLabels = func() [600]string {
	var s [600]string
	for i := 100; i < 600; i++ {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// measure records every request but the probes and /metrics itself. It
// runs outside recovery, so a panic is counted as the 500 it became; a
// client gone mid-stream (recovery re-panics) is counted with the status
// already sent.
func measure(c *gin.Context) {
	if !notProbe(c) {
		c.Next()
		return
	}
	start := time.Now()
	defer func() {
		method, ok := knownMethods[c.Request.Method]
		if !ok {
			method = "_OTHER"
		}
		status := c.Writer.Status()
		label := "0"
		if status >= 100 && status < 600 {
			label = statusLabels[status]
		}
		requestDuration.WithLabelValues(method, c.FullPath(), label).Observe(time.Since(start).Seconds())
	}()
	c.Next()
}
