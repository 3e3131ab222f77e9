package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/charts/chartcheck/controlplane"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// repoRoot is where the helm commands run, so that they read as in the
// platform guide (charts/doclib, charts/doclib/ci/...).
const repoRoot = "../../.."

// helm runs .bin/helm against the cluster, from the repository's root, with
// a configuration of its own; it fails the test when helm fails.
func helm(t *testing.T, c *controlplane.Cluster, args ...string) string {
	t.Helper()
	out, err := helmRun(t, c, args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func helmRun(t *testing.T, c *controlplane.Cluster, args ...string) (string, error) {
	t.Helper()
	home := filepath.Join(filepath.Dir(c.Kubeconfig), "helm")
	cmd := exec.Command(filepath.Join(c.BinDir, "helm"), args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig,
		"HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	out, err := cmd.CombinedOutput()
	if exited := c.Exited(); exited != "" {
		t.Fatalf("%s of the control plane exited", exited)
	}
	return string(out), err
}

// restrictedNamespace makes a namespace whose pods must meet PodSecurity
// "restricted" (enforced; audited and warned too), as a platform engineer
// labels the release's namespace.
func restrictedNamespace(t *testing.T, c *controlplane.Cluster, name string) {
	t.Helper()
	labels := map[string]string{}
	for _, mode := range []string{"enforce", "audit", "warn"} {
		labels["pod-security.kubernetes.io/"+mode] = "restricted"
		labels["pod-security.kubernetes.io/"+mode+"-version"] = "latest"
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	ctx := context.Background()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods are refused until the controller manager has made the
	// namespace's default ServiceAccount.
	for range 300 {
		if _, err := c.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no default ServiceAccount in %s", name)
}

// warnings collects the API server's warnings (PodSecurity's among them).
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.list
	w.list = nil
	return l
}

// applier applies manifests with the dynamic client.
type applier struct {
	client   dynamic.Interface
	mapper   meta.RESTMapper
	warnings *warnings
}

func newApplier(t *testing.T, c *controlplane.Cluster) *applier {
	t.Helper()
	cfg := rest.CopyConfig(c.Config)
	w := &warnings{}
	cfg.WarningHandlerWithContext = nil
	cfg.WarningHandler = w
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &applier{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Client.Discovery())), warnings: w}
}

// apply server-side applies each object of a multi-document YAML stream in
// namespace ns (where the object is namespaced); with dryRun set, the server
// only judges them (kubectl apply --server-side --dry-run=server
// --validate=strict). Unknown or duplicate fields are errors.
func (a *applier) apply(ctx context.Context, manifests []byte, ns string, dryRun bool) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var errs []error
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return err
		}
		if obj.Object == nil {
			continue
		}
		if err := a.applyOne(ctx, &obj, ns, dryRun); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (a *applier) applyOne(ctx context.Context, obj *unstructured.Unstructured, ns string, dryRun bool) error {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var res dynamic.ResourceInterface = a.client.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		res = a.client.Resource(m.Resource).Namespace(ns)
	}
	body, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	opts := metav1.PatchOptions{FieldManager: "lifecycle-test", Force: new(true), FieldValidation: "Strict"}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	if _, err := res.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, opts); err != nil {
		return errors.New(gvk.Kind + " " + obj.GetName() + ": " + err.Error())
	}
	return nil
}

// waitEstablished waits for a CustomResourceDefinition to be served.
func waitEstablished(ctx context.Context, a *applier, name string) error {
	crds := a.client.Resource(crdResource)
	for {
		crd, err := crds.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("CRD " + name + " not established: " + ctx.Err().Error())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
