package e2e

import (
	"encoding/hex"
	"io"
	"net/http"
	"sync"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpSpan is what the OTLP receiver keeps of one span.
type otlpSpan struct {
	service, name     string
	kind              tracepb.Span_SpanKind
	trace, id, parent string
	links             []string // span ids
}

// receiver is an OTLP/HTTP trace endpoint (POST /v1/traces, protobuf):
// the services export to it as they would to a collector.
type receiver struct {
	mu    sync.Mutex
	spans []otlpSpan
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := otlpSpan{service: service, name: s.GetName(), kind: s.GetKind(),
					trace: hex.EncodeToString(s.GetTraceId()), id: hex.EncodeToString(s.GetSpanId()),
					parent: hex.EncodeToString(s.GetParentSpanId())}
				for _, l := range s.GetLinks() {
					sp.links = append(sp.links, hex.EncodeToString(l.GetSpanId()))
				}
				rc.spans = append(rc.spans, sp)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(nil) // an empty ExportTraceServiceResponse
}

// trace returns the spans of trace id, by span id.
func (rc *receiver) trace(id string) map[string]otlpSpan {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string]otlpSpan{}
	for _, s := range rc.spans {
		if s.trace == id {
			out[s.id] = s
		}
	}
	return out
}

func (rc *receiver) all() []otlpSpan {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]otlpSpan(nil), rc.spans...)
}

// find returns the first span of spans named name by service.
func find(spans map[string]otlpSpan, service, name string) (otlpSpan, bool) {
	for _, s := range spans {
		if s.service == service && s.name == name {
			return s, true
		}
	}
	return otlpSpan{}, false
}

// ancestors lists the services and names from s up to the trace's root.
func ancestors(spans map[string]otlpSpan, s otlpSpan) []string {
	var path []string
	for {
		path = append(path, s.service+": "+s.name)
		p, ok := spans[s.parent]
		if !ok {
			return path
		}
		s = p
	}
}
