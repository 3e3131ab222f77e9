package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/doclib/charts/chartcheck/controlplane"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// prometheusOperator is the module the Prometheus Operator's CRDs are read
// from (example/prometheus-operator-crd). The module proxy serves no later
// version of this module than the one named (the API types' module,
// pkg/apis/monitoring, is newer in go.mod: ServiceMonitor and PrometheusRule
// are monitoring.coreos.com/v1 in both).
const prometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// release is one install of the chart: a values file of charts/doclib/ci in
// a namespace of its own, under the platform guide's release name.
type release struct {
	name      string // the values file's name without -values.yaml
	values    string // its path from the repository's root
	namespace string
}

func (r release) helmArgs(verb string, extra ...string) []string {
	args := []string{verb, "doclib", "charts/doclib", "-n", r.namespace, "-f", r.values}
	return append(args, extra...)
}

func releases(t *testing.T) []release {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "charts/doclib/ci/*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no charts/doclib/ci/*-values.yaml (%v)", err)
	}
	var rs []release
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), "-values.yaml")
		rs = append(rs, release{name: name, values: "charts/doclib/ci/" + filepath.Base(f), namespace: "doclib-" + name})
	}
	return rs
}

// TestLifecycle takes the chart through install, dry-run, test, upgrades,
// rollback and uninstall, in that order, on one control plane.
func TestLifecycle(t *testing.T) {
	c := controlplane.Start(t)
	a := newApplier(t, c)
	rs := releases(t)
	installPrometheusCRDs(t, a)
	for _, r := range rs {
		restrictedNamespace(t, c, r.namespace)
	}
	t.Run("restricted", func(t *testing.T) { testRestricted(t, c, rs[0].namespace) })
	for _, r := range rs {
		t.Run("install/"+r.name, func(t *testing.T) {
			helm(t, c, r.helmArgs("install", "--wait", "--timeout", "3m")...)
		})
	}
	if t.Failed() {
		return
	}
}

// installPrometheusCRDs installs the Prometheus Operator's CRDs, which the
// monitoring values need (ServiceMonitor, PrometheusRule).
func installPrometheusCRDs(t *testing.T, a *applier) {
	t.Helper()
	dir, err := controlplane.DownloadModule(prometheusOperator)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "example/prometheus-operator-crd/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s (%v)", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.apply(ctx, b, "", false); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		group, plural, _ := strings.Cut(name, "_")
		if err := waitEstablished(ctx, a, plural+"."+group); err != nil {
			t.Fatal(err)
		}
	}
}

// testRestricted checks that the namespace refuses a pod that
// PodSecurity "restricted" forbids, so the installs below prove the chart's
// pods meet it.
func testRestricted(t *testing.T, c *controlplane.Cluster, ns string) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "example.org/x",
			SecurityContext: &corev1.SecurityContext{Privileged: new(true)},
		}}},
	}
	_, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a privileged pod in %s: %v; want refused by PodSecurity", ns, err)
	}
}

