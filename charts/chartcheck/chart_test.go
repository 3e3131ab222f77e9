package chartcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const chartDir = "../doclib"

var services = []string{"gateway", "taxonomy", "catalog", "media", "webhook"}

// manifests is one render, decoded.
type manifests struct {
	pods        []*corev1.Pod // helm test hooks
	monitors    []*monitoringv1.ServiceMonitor
	rules       []*monitoringv1.PrometheusRule
	deployments []*appsv1.Deployment
	services    []*corev1.Service
	ingresses   []*networkingv1.Ingress
	hpas        []*autoscalingv2.HorizontalPodAutoscaler
	pdbs        []*policyv1.PodDisruptionBudget
	netpols     []*networkingv1.NetworkPolicy
	secrets     []*corev1.Secret
	accounts    []*corev1.ServiceAccount
	cronjobs    []*batchv1.CronJob
}

func TestRenders(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	tests := []struct {
		file string
		// Secrets the values name but the chart does not make.
		existing []string
		check    func(t *testing.T, m *manifests)
	}{
		{file: "default-values.yaml", existing: []string{"doclib-s3"}, check: func(t *testing.T, m *manifests) {
			wantCount(t, "HPAs", len(m.hpas), 0)
			wantCount(t, "NetworkPolicies (on by default)", len(m.netpols), 5)
			wantCount(t, "PDBs", len(m.pdbs), 5)
			gw := env(t, deployment(t, m, "gateway"))
			if _, ok := gw["BO_API_TOKENS"]; !ok {
				t.Error("gateway has no BO_API_TOKENS with bo.tokens set")
			}
			if e := env(t, deployment(t, m, "taxonomy")); e["MODERATOR_EMAIL"] != "moderation@example.org" {
				t.Errorf("taxonomy MODERATOR_EMAIL = %q", e["MODERATOR_EMAIL"])
			}
			bo := secret(t, m, "doclib-bo")
			if got := string(bo.Data["bo-api-tokens"]); got != "ci-editor:editor:ci-only-token-0123456789abcdef-0123" {
				t.Errorf("bo-api-tokens = %q, want NAME:ROLE:TOKEN", got)
			}
			if key := secret(t, m, "doclib-identity").Data["identity-signing-key"]; len(key) < 32 {
				t.Errorf("the generated identity key has %d bytes, want 32 or more", len(key))
			}
			wk := secret(t, m, "doclib-webhook-secret-key")
			if key := wk.Data["webhook-secret-key"]; len(key) < 32 {
				t.Errorf("the generated webhook secret key has %d bytes, want 32 or more", len(key))
			}
			if wk.Annotations["helm.sh/resource-policy"] != "keep" {
				t.Error("the webhook secret key's Secret is not kept by helm uninstall: the sealed secrets would be lost with it")
			}
		}},
		{file: "hpa-values.yaml", existing: []string{"doclib-s3"}, check: func(t *testing.T, m *manifests) {
			wantCount(t, "HPAs", len(m.hpas), 5)
			wantCount(t, "PDBs", len(m.pdbs), 5)
			for _, d := range m.deployments {
				if d.Spec.Replicas != nil {
					t.Errorf("%s sets replicas %d while its HPA owns the count", d.Name, *d.Spec.Replicas)
				}
			}
			for _, h := range m.hpas {
				if h.Spec.ScaleTargetRef.Name != h.Name || len(h.Spec.Metrics) != 1 || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
					t.Errorf("HPA %s: target %s, metrics %+v; want its Deployment, scaled on CPU", h.Name, h.Spec.ScaleTargetRef.Name, h.Spec.Metrics)
				}
			}
		}},
		{file: "networkpolicy-values.yaml", existing: []string{"doclib-mongodb", "doclib-minio", "doclib-bo", "doclib-identity-existing", "doclib-webhook-secret-key-existing"}, check: func(t *testing.T, m *manifests) {
			wantCount(t, "NetworkPolicies", len(m.netpols), 5)
			wantCount(t, "PDBs (taxonomy has one replica)", len(m.pdbs), 4)
			wantCount(t, "Secrets made by the chart", len(m.secrets), 0)
			for _, d := range m.deployments {
				if e := env(t, d); e["OTEL_EXPORTER_OTLP_ENDPOINT"] == "" {
					t.Errorf("%s has no OTEL_EXPORTER_OTLP_ENDPOINT with otel.endpoint set", d.Name)
				}
			}
		}},
		{file: "oidc-values.yaml", check: func(t *testing.T, m *manifests) {
			gw := env(t, deployment(t, m, "gateway"))
			if _, ok := gw["BO_API_TOKENS"]; ok {
				t.Error("gateway has BO_API_TOKENS with OIDC only")
			}
			if gw["OIDC_ISSUER_URL"] == "" || gw["OIDC_AUDIENCE"] == "" {
				t.Errorf("gateway env %v lacks OIDC_ISSUER_URL or OIDC_AUDIENCE", gw)
			}
			for _, s := range m.secrets {
				if strings.HasSuffix(s.Name, "-bo") {
					t.Errorf("Secret %s made with OIDC only", s.Name)
				}
			}
			gp := netpol(t, m, "gateway")
			if !slices.ContainsFunc(gp.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool { return hasPort(r.Ports, 443) }) {
				t.Error("the gateway's NetworkPolicy does not let it reach the OIDC issuer (443)")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			out, err := render(ch, valuesFile(t, tt.file))
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			notes := out["doclib/templates/NOTES.txt"]
			if !strings.Contains(notes, "Back-office authentication:") {
				t.Errorf("NOTES.txt does not say how /bo is authenticated:\n%s", notes)
			}
			t.Logf("NOTES.txt:\n%s", notes)
			m := decode(t, out)
			checkCommon(t, m, tt.existing)
			tt.check(t, m)
		})
	}
}

// The chart must never render a gateway whose /bo has no credentials.
func TestRefusesWithoutCredentials(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	for _, vals := range []map[string]any{
		valuesFile(t, "fail-no-credentials.yaml"),
		{"moderatorEmail": "moderation@example.org"}, // the chart's own defaults otherwise
	} {
		_, err := render(ch, vals)
		if err == nil || !strings.Contains(err.Error(), "needs credentials and there is no default token") {
			t.Errorf("render without back-office credentials: error %v, want the chart's refusal", err)
		}
	}
	bad := valuesFile(t, "default-values.yaml")
	bad["bo"] = map[string]any{"tokens": []any{map[string]any{"name": "alice", "role": "admin", "token": "0123456789abcdef0123456789abcdef"}}}
	if _, err := render(ch, bad); err == nil || !strings.Contains(err.Error(), "role") {
		t.Errorf("a token with an unknown role: error %v, want a schema error", err)
	}
	bad["bo"] = map[string]any{"tokens": []any{map[string]any{"name": "alice", "role": "editor", "token": "short"}}}
	if _, err := render(ch, bad); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("a short token: error %v, want a schema error", err)
	}
	bad = valuesFile(t, "default-values.yaml")
	delete(bad, "moderatorEmail")
	if _, err := render(ch, bad); err == nil || !strings.Contains(err.Error(), "moderatorEmail is required") {
		t.Errorf("no moderatorEmail: error %v, want the chart's refusal", err)
	}
	bad = valuesFile(t, "default-values.yaml")
	bad["moderatorEmail"] = "not an address"
	if _, err := render(ch, bad); err == nil || !strings.Contains(err.Error(), "moderatorEmail") {
		t.Errorf("a moderatorEmail that is not one: error %v, want a schema error", err)
	}
	bad = valuesFile(t, "default-values.yaml")
	bad["gateway"] = map[string]any{"adminPort": 8080}
	if _, err := render(ch, bad); err == nil || !strings.Contains(err.Error(), "adminPort must differ") {
		t.Errorf("one port for both listeners: error %v, want the chart's refusal", err)
	}
	_, err := render(ch, map[string]any{"bo": map[string]any{"oidc": map[string]any{"issuerUrl": "https://id.example.com"}}})
	if err == nil || !strings.Contains(err.Error(), "bo.oidc.audience is required") {
		t.Errorf("OIDC issuer without audience: error %v, want a refusal naming bo.oidc.audience", err)
	}
}

// A typo in values fails against values.schema.json.
func TestSchemaRejectsUnknownKeys(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	vals := valuesFile(t, "default-values.yaml")
	vals["catalog"] = map[string]any{"replicas": 3}
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("catalog.replicas (a typo of replicaCount): error %v, want a schema error", err)
	}
}

// checkCommon holds for every render.
func checkCommon(t *testing.T, m *manifests, existingSecrets []string) {
	t.Helper()
	wantCount(t, "Deployments", len(m.deployments), len(services))
	wantCount(t, "Services", len(m.services), len(services))
	wantCount(t, "ServiceAccounts", len(m.accounts), len(services))
	for _, a := range m.accounts {
		if a.AutomountServiceAccountToken == nil || *a.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %s mounts its token", a.Name)
		}
	}
	secrets := slices.Clone(existingSecrets)
	for _, s := range m.secrets {
		secrets = append(secrets, s.Name)
	}
	hpa := map[string]bool{}
	for _, h := range m.hpas {
		hpa[h.Spec.ScaleTargetRef.Name] = true
	}
	pdb := map[string]bool{}
	for _, p := range m.pdbs {
		pdb[p.Name] = true
		if p.Spec.MaxUnavailable == nil || p.Spec.MaxUnavailable.IntValue() != 1 || p.Spec.MinAvailable != nil {
			t.Errorf("PDB %s: want maxUnavailable 1 and no minAvailable", p.Name)
		}
	}
	for _, d := range m.deployments {
		checkDeployment(t, d, secrets)
		wantPDB := hpa[d.Name] || (d.Spec.Replicas != nil && *d.Spec.Replicas > 1)
		if pdb[d.Name] != wantPDB {
			t.Errorf("%s: PDB rendered %v, want %v (replicas %v, HPA %v)", d.Name, pdb[d.Name], wantPDB, d.Spec.Replicas, hpa[d.Name])
		}
		if hpa[d.Name] && d.Spec.Replicas != nil {
			t.Errorf("%s sets replicas while an HPA scales it", d.Name)
		}
	}
	checkIngresses(t, m)
	checkIdentityKey(t, m)
	checkWebhookSecretKey(t, m)
	checkHelmTest(t, m)
	checkNetworkPolicies(t, m)
	checkMetricsNotRouted(t, m)
}

func checkDeployment(t *testing.T, d *appsv1.Deployment, secrets []string) {
	t.Helper()
	pod := d.Spec.Template.Spec
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", d.Name)
	}
	if psc := pod.SecurityContext; !restrictedPod(psc) {
		t.Errorf("%s: pod securityContext %+v is not restricted (non-root 65532, seccomp RuntimeDefault)", d.Name, psc)
	}
	tmp := slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "tmp" && v.EmptyDir != nil })
	if !tmp {
		t.Errorf("%s: no emptyDir volume for /tmp", d.Name)
	}
	if len(pod.Containers) == 0 {
		t.Fatalf("%s has no container", d.Name)
	}
	for _, c := range pod.Containers {
		where := d.Name + "/" + c.Name
		for name, p := range map[string]*corev1.Probe{"startupProbe": c.StartupProbe, "livenessProbe": c.LivenessProbe, "readinessProbe": c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Errorf("%s: no HTTP %s", where, name)
			}
		}
		if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path != "/healthz" {
			t.Errorf("%s: liveness on %s, want /healthz", where, c.LivenessProbe.HTTPGet.Path)
		}
		if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("%s: readiness on %s, want /readyz", where, c.ReadinessProbe.HTTPGet.Path)
		}
		if sc := c.SecurityContext; !restricted(sc) {
			t.Errorf("%s: container securityContext %+v is not restricted", where, sc)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.Name == "tmp" && v.MountPath == "/tmp" }) {
			t.Errorf("%s: /tmp is not mounted", where)
		}
		if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
			t.Errorf("%s: resources.requests %v lack cpu or memory", where, c.Resources.Requests)
		}
		seen := map[string]bool{}
		for _, e := range c.Env {
			if seen[e.Name] {
				t.Errorf("%s: env %s set twice", where, e.Name)
			}
			seen[e.Name] = true
			if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && !slices.Contains(secrets, ref.SecretKeyRef.Name) {
				t.Errorf("%s: env %s reads Secret %s, which is neither rendered nor named in the values", where, e.Name, ref.SecretKeyRef.Name)
			}
		}
		// Kubernetes must not kill a pod that is still draining.
		e := env(t, d)
		drain, err1 := time.ParseDuration(e["SHUTDOWN_DRAIN_DELAY"])
		shut, err2 := time.ParseDuration(e["SHUTDOWN_TIMEOUT"])
		if err1 != nil || err2 != nil {
			t.Errorf("%s: SHUTDOWN_DRAIN_DELAY %q / SHUTDOWN_TIMEOUT %q are not durations", where, e["SHUTDOWN_DRAIN_DELAY"], e["SHUTDOWN_TIMEOUT"])
		} else if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= drain+shut {
			t.Errorf("%s: terminationGracePeriodSeconds %v is not above drain %v + shutdown %v", where, g, drain, shut)
		}
	}
}

// checkIngresses: two hosts, the public one on the gateway's public port
// (never a /bo path), the admin one on its admin port.
// restrictedPod: the pod-level part of Pod Security "restricted".
func restrictedPod(psc *corev1.PodSecurityContext) bool {
	return psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot && psc.RunAsUser != nil && *psc.RunAsUser == 65532 &&
		psc.SeccompProfile != nil && psc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
}

// restricted: a container under Pod Security "restricted", with a
// read-only root filesystem.
func restricted(sc *corev1.SecurityContext) bool {
	return sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot &&
		sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation &&
		sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem &&
		sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) &&
		sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
}

func checkIngresses(t *testing.T, m *manifests) {
	t.Helper()
	wantCount(t, "Ingresses", len(m.ingresses), 2)
	ports := map[string]string{} // host -> Service port name
	for _, ing := range m.ingresses {
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName == "" {
			t.Errorf("Ingress %s has no ingressClassName", ing.Name)
		}
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil || len(r.HTTP.Paths) == 0 {
				t.Errorf("Ingress %s host %s: no path", ing.Name, r.Host)
				continue
			}
			for _, p := range r.HTTP.Paths {
				if !strings.HasSuffix(p.Backend.Service.Name, "-gateway") {
					t.Errorf("Ingress %s routes to %s, want the gateway", ing.Name, p.Backend.Service.Name)
				}
				port := p.Backend.Service.Port.Name
				if prev, ok := ports[r.Host]; ok && prev != port {
					t.Errorf("Ingress %s host %s routes to ports %s and %s, want one listener", ing.Name, r.Host, prev, port)
				}
				ports[r.Host] = port
				if port == "http" && (p.Path == "/bo" || strings.HasPrefix(p.Path, "/bo/")) {
					t.Errorf("public Ingress %s routes %s", ing.Name, p.Path)
				}
			}
		}
	}
	var got []string
	for _, p := range ports {
		got = append(got, p)
	}
	sort.Strings(got)
	if len(ports) != 2 || !slices.Equal(got, []string{"admin", "http"}) {
		t.Errorf("Ingress hosts and ports %v: want two hosts, one on the public port (http), the other on the admin port", ports)
	}
	gw := service(t, m, "gateway")
	var names []string
	for _, p := range gw.Spec.Ports {
		names = append(names, fmt.Sprintf("%s:%d", p.Name, p.Port))
	}
	if !slices.Equal(names, []string{"http:8080", "admin:8090"}) {
		t.Errorf("gateway Service ports %v, want http:8080 and admin:8090", names)
	}
	d := deployment(t, m, "gateway")
	e := env(t, d)
	if e["PUBLIC_ADDR"] != ":8080" || e["ADMIN_ADDR"] != ":8090" || e["HTTP_ADDR"] != "" {
		t.Errorf("gateway env PUBLIC_ADDR %q ADMIN_ADDR %q HTTP_ADDR %q, want :8080, :8090 and none", e["PUBLIC_ADDR"], e["ADMIN_ADDR"], e["HTTP_ADDR"])
	}
}

// checkIdentityKey: every service reads the same identity signing key.
func checkIdentityKey(t *testing.T, m *manifests) {
	t.Helper()
	refs := map[string]bool{}
	for _, d := range m.deployments {
		var ref *corev1.SecretKeySelector
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "IDENTITY_SIGNING_KEY" && e.ValueFrom != nil {
				ref = e.ValueFrom.SecretKeyRef
			}
		}
		if ref == nil {
			t.Errorf("%s has no IDENTITY_SIGNING_KEY from a Secret", d.Name)
			continue
		}
		refs[ref.Name+"/"+ref.Key] = true
	}
	if len(refs) != 1 {
		t.Errorf("the services read the identity key from %v, want one Secret key", refs)
	}
}

// checkWebhookSecretKey: the webhook service reads the key its signing
// secrets are sealed with, and the keys that only open them, from a
// Secret (the latter optional).
func checkWebhookSecretKey(t *testing.T, m *manifests) {
	t.Helper()
	refs := map[string]*corev1.SecretKeySelector{}
	for _, e := range deployment(t, m, "webhook").Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs[e.Name] = e.ValueFrom.SecretKeyRef
		}
	}
	key, others := refs["WEBHOOK_SECRET_KEY"], refs["WEBHOOK_SECRET_DECRYPTION_KEYS"]
	if key == nil || (key.Optional != nil && *key.Optional) {
		t.Errorf("webhook has no WEBHOOK_SECRET_KEY from a Secret, required (%+v)", key)
	}
	if others == nil || others.Optional == nil || !*others.Optional || key != nil && others.Name != key.Name {
		t.Errorf("webhook WEBHOOK_SECRET_DECRYPTION_KEYS: %+v, want the same Secret, optional", others)
	}
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return ch
}

func valuesFile(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "ci", name))
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return vals
}

// render does what `helm template` does: coalesce and validate the values
// against the schema, then run the templates (fail stops the render).
func render(ch *chart.Chart, vals map[string]any) (map[string]string, error) {
	opts := chartutil.ReleaseOptions{Name: "doclib", Namespace: "doclib", Revision: 1, IsInstall: true}
	caps := chartutil.DefaultCapabilities.Copy()
	rv, err := chartutil.ToRenderValues(ch, vals, opts, caps)
	if err != nil {
		return nil, err
	}
	return engine.Render(ch, rv)
}

var docSep = regexp.MustCompile(`(?m)^---\s*$`)

// decode splits every rendered file into documents and decodes each one
// strictly: an unknown or duplicated field, a wrong type or an unknown kind
// fails the test.
func decode(t *testing.T, out map[string]string) *manifests {
	t.Helper()
	dec := serializer.NewCodecFactory(kinds, serializer.EnableStrict).UniversalDeserializer()
	m := &manifests{}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for i, doc := range docSep.Split(out[name], -1) {
			if isBlank(doc) {
				continue
			}
			obj, _, err := dec.Decode([]byte(doc), nil, nil)
			if err != nil {
				t.Errorf("%s document %d: %v\n%s", name, i, err, doc)
				continue
			}
			m.add(t, name, obj)
		}
	}
	return m
}

// kinds are the kinds the chart may render: Kubernetes' own and
// prometheus-operator's.
var kinds = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

func (m *manifests) add(t *testing.T, file string, obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		m.pods = append(m.pods, o)
	case *monitoringv1.ServiceMonitor:
		m.monitors = append(m.monitors, o)
	case *monitoringv1.PrometheusRule:
		m.rules = append(m.rules, o)
	case *appsv1.Deployment:
		m.deployments = append(m.deployments, o)
	case *corev1.Service:
		m.services = append(m.services, o)
	case *networkingv1.Ingress:
		m.ingresses = append(m.ingresses, o)
	case *autoscalingv2.HorizontalPodAutoscaler:
		m.hpas = append(m.hpas, o)
	case *policyv1.PodDisruptionBudget:
		m.pdbs = append(m.pdbs, o)
	case *networkingv1.NetworkPolicy:
		m.netpols = append(m.netpols, o)
	case *corev1.Secret:
		m.secrets = append(m.secrets, o)
	case *corev1.ServiceAccount:
		m.accounts = append(m.accounts, o)
	case *batchv1.CronJob:
		m.cronjobs = append(m.cronjobs, o)
	default:
		t.Errorf("%s: unexpected kind %T", file, obj)
	}
}

// isBlank reports whether a document holds only comments and blank lines.
func isBlank(doc string) bool {
	for _, l := range strings.Split(doc, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// named returns the object of items whose name matches, or fails t.
func named[T interface{ GetName() string }](t *testing.T, items []T, what string, match func(name string) bool) T {
	t.Helper()
	for _, o := range items {
		if match(o.GetName()) {
			return o
		}
	}
	var zero T
	t.Fatalf("no %s", what)
	return zero
}

func component(svc string) func(string) bool {
	return func(name string) bool { return strings.HasSuffix(name, "-"+svc) }
}

func deployment(t *testing.T, m *manifests, svc string) *appsv1.Deployment {
	t.Helper()
	return named(t, m.deployments, "Deployment for "+svc, component(svc))
}

func service(t *testing.T, m *manifests, svc string) *corev1.Service {
	t.Helper()
	return named(t, m.services, "Service for "+svc, component(svc))
}

func netpol(t *testing.T, m *manifests, svc string) *networkingv1.NetworkPolicy {
	t.Helper()
	return named(t, m.netpols, "NetworkPolicy for "+svc, component(svc))
}

func secret(t *testing.T, m *manifests, name string) *corev1.Secret {
	t.Helper()
	return named(t, m.secrets, "Secret "+name, func(n string) bool { return n == name })
}

// env is the first container's plain environment (valueFrom entries map to "").
func env(t *testing.T, d *appsv1.Deployment) map[string]string {
	t.Helper()
	e := map[string]string{}
	for _, v := range d.Spec.Template.Spec.Containers[0].Env {
		e[v.Name] = v.Value
	}
	return e
}

func hasPort(ports []networkingv1.NetworkPolicyPort, n int) bool {
	return slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool { return p.Port != nil && p.Port.IntValue() == n })
}

func hasPortProto(ports []networkingv1.NetworkPolicyPort, n int, proto corev1.Protocol) bool {
	return slices.ContainsFunc(ports, func(p networkingv1.NetworkPolicyPort) bool {
		return p.Port != nil && p.Port.IntValue() == n && p.Protocol != nil && *p.Protocol == proto
	})
}

func wantCount(t *testing.T, what string, got, want int) {
	t.Helper()
	if got != want {
		t.Errorf("%s: %d rendered, want %d", what, got, want)
	}
}
