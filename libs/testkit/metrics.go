package testkit

import (
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/doclib/libs/metrics"
)

// Metric is the value of this process's metric name (a counter's or a
// gauge's value, a histogram's count) summed over the series whose labels
// include labels (name, value pairs).
func Metric(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	Must(t, err, "gather metrics")
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if !hasLabels(m, labels) {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
