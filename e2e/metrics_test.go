package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// scrape returns the /metrics text of service s (the gateway's admin
// listener for "gateway").
func scrape(t *testing.T, st *Stack, s string) string {
	t.Helper()
	base := st.ServiceURL(s)
	if s == "gateway" {
		base = st.AdminURL
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", s, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s /metrics: %v", s, err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("%s /metrics: %d %s", s, res.StatusCode, res.Header.Get("Content-Type"))
	}
	return string(body)
}

// Every service serves /metrics on its own port, the gateway on its admin
// listener only (CONTRACT.md §7, §11): HTTP
// requests under the OpenTelemetry names by route and status, the outbox
// backlog, and events published, applied, retried and dead-lettered.
func TestMetrics(t *testing.T) {
	st := NewStack(t, nil)
	doc := tagged(st, "c", "a", "b")
	st.Must("DELETE", "/bo/tags/a", nil, 204)
	Eventually(t, 10*time.Second, "tag a leaves the document", func() bool { return publicTags(st, doc) == "b" })

	want := map[string][]string{
		"taxonomy": {
			`http_server_request_duration_seconds_count{http_request_method="DELETE",http_response_status_code="204",http_route="/bo/tags/:id"} 1`,
			`doclib_outbox_pending_events{collection="outbox"}`,
			`doclib_outbox_oldest_pending_event_timestamp_seconds{collection="outbox"}`,
			`doclib_events_published_total{subject="library.taxonomy.tag.deleted"} 1`,
		},
		"catalog": {
			`http_server_request_duration_seconds_bucket{http_request_method="GET",http_response_status_code="200",http_route="/public/documents/:id/detail",le="+Inf"}`,
			`doclib_outbox_pending_events{collection="outbox"}`,
			`doclib_events_applied_total{consumer="catalog-tag-deleted"} 1`,
			`doclib_events_retried_total{consumer="catalog-tag-deleted",reason="failed"} 0`,
			`doclib_events_retried_total{consumer="catalog-media-deleted",reason="unavailable"} 0`,
			`doclib_events_dead_lettered_total{consumer="catalog-category-deleted"} 0`,
		},
		"media": {
			`doclib_outbox_pending_events{collection="outbox"}`,
			"go_goroutines ",
		},
		"gateway": {
			`http_server_request_duration_seconds_count{http_request_method="DELETE",http_response_status_code="204",http_route="/bo/tags/:id"} 1`,
			`http_server_request_duration_seconds_count{http_request_method="GET",http_response_status_code="200",http_route="/public/documents/:id/detail"}`,
		},
	}
	for s, lines := range want {
		out := scrape(t, st, s)
		for _, l := range lines {
			if !strings.Contains(out, l) {
				t.Errorf("%s /metrics lacks %s", s, l)
			}
		}
		if strings.Contains(out, `http_route="/readyz"`) {
			t.Errorf("%s /metrics counts its readiness probes", s)
		}
	}
	// Never on the gateway's public listener (CONTRACT.md §7).
	if r := st.Req("GET", "/metrics", nil); r.Status != http.StatusNotFound {
		t.Errorf("/metrics on the public listener: %d, want 404", r.Status)
	}
}
