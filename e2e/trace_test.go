package e2e

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// With OTEL_EXPORTER_OTLP_ENDPOINT set (CONTRACT.md §11), one trace follows
// a tag's deletion from the gateway through taxonomy and its MongoDB, into
// the event created for NATS, and on into the catalog's consumer that
// applies it; an upload's trace reaches MinIO; and every log line written
// while serving a request carries its trace_id.
func TestOneTraceFromTheGatewayToTheConsumer(t *testing.T) {
	rc := &receiver{}
	otlp := httptest.NewServer(rc)
	t.Cleanup(otlp.Close)
	telemetry := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_BSP_SCHEDULE_DELAY=100"}
	st := NewStack(t, map[string][]string{
		"gateway": telemetry, "taxonomy": telemetry, "catalog": telemetry, "media": telemetry,
	})
	doc := tagged(st, "c", "a", "b")

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	const requestID = "e2e-trace-delete"
	r := st.BO("DELETE", "/bo/tags/a", nil,
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01", "X-Request-ID", requestID)
	wantStatus(t, r, 204, "DELETE /bo/tags/a")
	Eventually(t, 10*time.Second, "tag a leaves the document", func() bool { return publicTags(st, doc) == "b" })

	// Spans are exported in batches by each process: wait for the chain.
	var spans map[string]otlpSpan
	var path []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		spans = rc.trace(traceID)
		if process, ok := find(spans, "catalog", "process library.taxonomy.tag.deleted"); ok {
			path = ancestors(spans, process)
			if strings.HasPrefix(path[len(path)-1], "gateway: ") {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the consumer's span: %s", strings.Join(path, " <- "))
	want := []string{
		"catalog: process library.taxonomy.tag.deleted",
		"taxonomy: create library.taxonomy.tag.deleted",
	}
	if len(path) < 4 || path[0] != want[0] || path[1] != want[1] || !strings.HasPrefix(path[2], "taxonomy: ") ||
		!strings.HasPrefix(path[len(path)-1], "gateway: ") {
		t.Errorf("the consumer's span hangs from %q; want process <- create (taxonomy) <- taxonomy's request <- ... <- the gateway's", path)
	}
	var mongo, create bool
	for _, s := range spans {
		mongo = mongo || (s.service == "taxonomy" && s.kind == tracepb.Span_SPAN_KIND_CLIENT && strings.Contains(s.name, "tags"))
		create = create || s.name == "create library.taxonomy.tag.deleted"
	}
	if !mongo || !create {
		t.Errorf("trace %s: MongoDB span %v, create span %v; want both. Spans: %v", traceID, mongo, create, spans)
	}
	// The relay publishes later, in its own trace, linked to the create span.
	c, _ := find(spans, "taxonomy", "create library.taxonomy.tag.deleted")
	Eventually(t, 10*time.Second, "the relay's publish span linked to the create span", func() bool {
		for _, s := range rc.all() {
			if s.name == "publish library.taxonomy.tag.deleted" && s.kind == tracepb.Span_SPAN_KIND_PRODUCER && len(s.links) == 1 && s.links[0] == c.id {
				return true
			}
		}
		return false
	})

	// Log lines: the request's (gateway and taxonomy) and the event's
	// application carry the trace id.
	var reqLines, applied int
	for _, line := range strings.Split(st.logs.String(), "\n") {
		_, js, ok := strings.Cut(line, " | ")
		if !ok {
			continue
		}
		var rec map[string]any
		if json.Unmarshal([]byte(js), &rec) != nil {
			continue
		}
		switch {
		case rec["request_id"] == requestID:
			reqLines++
			if rec["trace_id"] != traceID {
				t.Errorf("a log line of the request without its trace id: %s", line)
			}
		case rec["msg"] == "event applied" && rec["consumer"] == "catalog-tag-deleted":
			applied++
			if rec["trace_id"] != traceID {
				t.Errorf("the event's application logged without the request's trace id: %s", line)
			}
		}
	}
	if reqLines < 2 || applied != 1 {
		t.Errorf("%d log lines of the request (want the gateway's and taxonomy's), %d of the event applied (want 1)", reqLines, applied)
	}

	// An upload: the media service's S3 calls are spans of the request.
	const uploadTrace = "5bf92f3577b34da6a3ce929d0e0e4737"
	body, ctype := fileBody(t, "guide.pdf", pdfBytes)
	r = st.BO("POST", "/bo/medias", body, "Content-Type", ctype, "traceparent", "00-"+uploadTrace+"-00f067aa0ba902b8-01")
	wantStatus(t, r, 201, "upload")
	Eventually(t, 20*time.Second, "an S3 span in the upload's trace", func() bool {
		for _, s := range rc.trace(uploadTrace) {
			if s.service == "media" && strings.HasPrefix(s.name, "s3 ") && s.kind == tracepb.Span_SPAN_KIND_CLIENT {
				return true
			}
		}
		return false
	})
}
