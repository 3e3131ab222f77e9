package chartcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
)

// Off by default; on, a ServiceMonitor per service scrapes /metrics on a
// port its Service has (the gateway's admin port, never the public one),
// and every alert is valid PromQL over this release's series.
func TestMonitoring(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	off, err := render(ch, valuesFile(t, "default-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if m := decode(t, off); len(m.monitors) != 0 || len(m.rules) != 0 {
		t.Errorf("defaults render %d ServiceMonitors and %d PrometheusRules, want none (the CRDs may be missing)", len(m.monitors), len(m.rules))
	}

	out, err := render(ch, valuesFile(t, "monitoring-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, out)
	checkCommon(t, m, []string{"doclib-s3"})
	wantCount(t, "ServiceMonitors", len(m.monitors), len(services))
	for _, sm := range m.monitors {
		if sm.Labels["release"] != "kube-prometheus-stack" {
			t.Errorf("ServiceMonitor %s lacks the labels of metrics.serviceMonitor.labels: %v", sm.Name, sm.Labels)
		}
		var svc *corev1.Service
		for _, s := range m.services {
			if s.Name == sm.Name && selects(sm.Spec.Selector.MatchLabels, s.Labels) {
				svc = s
			}
		}
		if svc == nil {
			t.Errorf("ServiceMonitor %s selects no Service of its name", sm.Name)
			continue
		}
		if len(sm.Spec.Endpoints) != 1 {
			t.Errorf("ServiceMonitor %s: %d endpoints, want 1", sm.Name, len(sm.Spec.Endpoints))
			continue
		}
		ep := sm.Spec.Endpoints[0]
		want := "http"
		if strings.HasSuffix(sm.Name, "-gateway") {
			want = "admin"
		}
		if ep.Port != want || ep.Path != "/metrics" || !servicePort(svc, want) {
			t.Errorf("ServiceMonitor %s scrapes port %v path %s; want %s (a port of its Service) and /metrics", sm.Name, ep.Port, ep.Path, want)
		}
	}

	wantCount(t, "PrometheusRules", len(m.rules), 1)
	var alerts []string
	for _, g := range m.rules[0].Spec.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			expr := r.Expr.String()
			if _, err := parser.ParseExpr(expr); err != nil {
				t.Errorf("alert %s: %v\n%s", r.Alert, err, expr)
			}
			if !strings.Contains(expr, `namespace="doclib"`) || !strings.Contains(expr, `job=~"doclib-(gateway|taxonomy|catalog|media|webhook)"`) {
				t.Errorf("alert %s does not select this release's series: %s", r.Alert, expr)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: labels %v, annotations %v; want a severity, a summary and a description", r.Alert, r.Labels, r.Annotations)
			}
		}
	}
	slices.Sort(alerts)
	if want := []string{"DoclibEventsDeadLettered", "DoclibHighErrorRate", "DoclibOutboxBacklogOld"}; !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}

// selects reports whether labels carry every one of selector.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

func servicePort(s *corev1.Service, name string) bool {
	return slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == name })
}
