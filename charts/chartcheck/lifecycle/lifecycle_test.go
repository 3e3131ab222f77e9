package lifecycle

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/doclib/charts/chartcheck/controlplane"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	t.Run("dry-run", func(t *testing.T) { testDryRun(t, c, rs) })
	t.Run("helm-test", func(t *testing.T) { helm(t, c, "test", "doclib", "-n", "doclib-default", "--timeout", "2m") })
	t.Run("unchanged-upgrade", func(t *testing.T) { testUnchangedUpgrade(t, c, rs) })
	t.Run("value-change-and-rollback", func(t *testing.T) { testValueChangeAndRollback(t, c, rs) })
	t.Run("uninstall", func(t *testing.T) { testUninstall(t, c, rs) })
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
		ObjectMeta: metav1.ObjectMeta{Name: "unconfined"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.org/x"}}},
	}
	_, err := c.Client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a pod without a security context in %s: %v; want refused by PodSecurity", ns, err)
	}
}

// testDryRun submits each values file's render to the server with
// --dry-run=server --validate=strict: every field known, every object
// admitted, and no warning (PodSecurity warns of a Deployment whose pods it
// would refuse).
func testDryRun(t *testing.T, c *controlplane.Cluster, rs []release) {
	a := newApplier(t, c) // one that knows the CRDs
	for _, r := range rs {
		out := helm(t, c, r.helmArgs("template")...)
		a.warnings.take()
		if err := a.apply(context.Background(), []byte(out), r.namespace, true); err != nil {
			t.Errorf("%s: the server refuses the render: %v", r.values, err)
		}
		if w := a.warnings.take(); len(w) > 0 {
			t.Errorf("%s: the server warns:\n%s", r.values, strings.Join(w, "\n"))
		}
	}
}

// workloads are the pod templates of a namespace's Deployments and CronJobs,
// by kind/name, with each object's generation.
type workload struct {
	generation int64
	template   corev1.PodTemplateSpec
}

func workloads(t *testing.T, c *controlplane.Cluster, ns string) map[string]workload {
	t.Helper()
	ctx := context.Background()
	ws := map[string]workload{}
	ds, err := c.Client.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds.Items {
		ws["Deployment/"+d.Name] = workload{d.Generation, d.Spec.Template}
	}
	cjs, err := c.Client.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cj := range cjs.Items {
		ws["CronJob/"+cj.Name] = workload{cj.Generation, cj.Spec.JobTemplate.Spec.Template}
	}
	return ws
}

// changed names the workloads whose pod template differs between before and after.
func changed(before, after map[string]workload) []string {
	var names []string
	for name, b := range before {
		if a, ok := after[name]; !ok || !equality.Semantic.DeepEqual(a.template, b.template) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// testUnchangedUpgrade upgrades each release with the values it was
// installed with: no pod template may change (nothing restarts).
func testUnchangedUpgrade(t *testing.T, c *controlplane.Cluster, rs []release) {
	for _, r := range rs {
		before := workloads(t, c, r.namespace)
		helm(t, c, r.helmArgs("upgrade", "--wait", "--timeout", "3m")...)
		if ch := changed(before, workloads(t, c, r.namespace)); len(ch) > 0 {
			t.Errorf("%s: an upgrade with unchanged values changes the pod templates of %v (their pods restart)", r.values, ch)
		}
	}
}

// testValueChangeAndRollback changes one service's setting: only that
// service's pods roll. A rollback to the revision before restores its
// template.
func testValueChangeAndRollback(t *testing.T, c *controlplane.Cluster, rs []release) {
	r := rs[slices.IndexFunc(rs, func(r release) bool { return r.name == "default" })]
	before := workloads(t, c, r.namespace)
	helm(t, c, r.helmArgs("upgrade", "--wait", "--timeout", "3m", "--set", "catalog.env.TRASH_RETENTION=1440h")...)
	after := workloads(t, c, r.namespace)
	if ch := changed(before, after); !slices.Equal(ch, []string{"Deployment/doclib-catalog"}) {
		t.Errorf("catalog.env changed the pod templates of %v; want Deployment/doclib-catalog alone", ch)
	}
	rolled := rolledOut(t, c, r.namespace, "doclib-catalog")
	if !rolled {
		t.Error("the catalog's new pods did not become ready")
	}
	helm(t, c, "rollback", "doclib", "-n", r.namespace, "--wait", "--timeout", "3m")
	if ch := changed(before, workloads(t, c, r.namespace)); len(ch) > 0 {
		t.Errorf("after the rollback, the pod templates of %v differ from before the change", ch)
	}
	hist := helm(t, c, "history", "doclib", "-n", r.namespace)
	if !strings.Contains(hist, "Rollback to") {
		t.Errorf("helm history shows no rollback:\n%s", hist)
	}
}

// rolledOut tells whether a Deployment's newest template has all its
// replicas updated and available.
func rolledOut(t *testing.T, c *controlplane.Cluster, ns, name string) bool {
	t.Helper()
	var d *appsv1.Deployment
	for range 100 {
		var err error
		d, err = c.Client.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.ObservedGeneration == d.Generation && d.Status.UpdatedReplicas == *d.Spec.Replicas &&
			d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.Replicas == *d.Spec.Replicas {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
}

// kept are the objects `helm uninstall` leaves, as the chart's README says:
// the Secret with the webhook secret key (helm.sh/resource-policy: keep),
// where the chart made it (no webhookSecretKey.existingSecret).
// Kubernetes' own objects of a namespace are not the release's.
var kept = map[string]bool{
	"Secret/doclib-webhook-secret-key": true,
	"ServiceAccount/default":           true,
	"ConfigMap/kube-root-ca.crt":       true,
}

func testUninstall(t *testing.T, c *controlplane.Cluster, rs []release) {
	for _, r := range rs {
		made := slices.Contains(leftovers(t, c, r.namespace), "Secret/doclib-webhook-secret-key")
		helm(t, c, "uninstall", "doclib", "-n", r.namespace, "--wait", "--timeout", "3m")
		left := leftovers(t, c, r.namespace)
		var unexpected []string
		for _, o := range left {
			if !kept[o] {
				unexpected = append(unexpected, o)
			}
		}
		if len(unexpected) > 0 {
			t.Errorf("%s: helm uninstall left %v", r.values, unexpected)
		}
		if made && !slices.Contains(left, "Secret/doclib-webhook-secret-key") {
			t.Errorf("%s: helm uninstall removed the webhook secret key, which it keeps", r.values)
		}
	}
}

// leftovers lists every object of a namespace (Events aside) as Kind/name,
// once its pods are gone.
func leftovers(t *testing.T, c *controlplane.Cluster, ns string) []string {
	t.Helper()
	ctx := context.Background()
	for range 150 {
		pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	lists, err := c.Client.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		t.Fatal(err)
	}
	a := newApplier(t, c)
	var left []string
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, res := range l.APIResources {
			if !slices.Contains(res.Verbs, "list") || res.Kind == "Event" {
				continue
			}
			items, err := a.client.Resource(gv.WithResource(res.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("list %s: %v", res.Name, err)
			}
			for _, it := range items.Items {
				left = append(left, fmt.Sprintf("%s/%s", res.Kind, it.GetName()))
			}
		}
	}
	slices.Sort(left)
	return left
}
