package chartcheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// checkNetworkPolicies: on by default, one per service, default-deny both
// ways; the gateway's public port only from the public ingress controller,
// its admin port only from the admin one (and the helm test pod and
// Prometheus); each service only from its callers and Prometheus.
func checkNetworkPolicies(t *testing.T, m *manifests) {
	t.Helper()
	wantCount(t, "NetworkPolicies", len(m.netpols), len(services))
	for _, np := range m.netpols {
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
			t.Errorf("NetworkPolicy %s: policyTypes %v, want Ingress and Egress", np.Name, np.Spec.PolicyTypes)
		}
		dns := slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return hasPortProto(r.Ports, 53, corev1.ProtocolUDP) && hasPortProto(r.Ports, 53, corev1.ProtocolTCP)
		})
		if !dns {
			t.Errorf("NetworkPolicy %s does not allow DNS on 53/UDP and 53/TCP", np.Name)
		}
	}
	want := map[string]map[string][]string{ // service -> port -> sources
		"gateway":  {"http": {"ingress:ingress-nginx", "test"}, "admin": {"ingress:ingress-nginx-internal", "prometheus", "test"}},
		"taxonomy": {"http": {"catalog", "gateway", "prometheus"}},
		"catalog":  {"http": {"gateway", "media", "prometheus"}},
		"media":    {"http": {"catalog", "gateway", "prometheus"}},
		"webhook":  {"http": {"gateway", "prometheus"}},
	}
	for svc, ports := range want {
		got := sources(netpol(t, m, svc))
		if fmt.Sprint(got) != fmt.Sprint(ports) {
			t.Errorf("%s accepts %v, want %v", svc, got, ports)
		}
	}
	// Egress: a data service reaches MongoDB and NATS, only media the object
	// store (on the port of its S3_ENDPOINT), only the gateway the other
	// services' ports.
	_, s3, _ := strings.Cut(env(t, deployment(t, m, "media"))["S3_ENDPOINT"], ":")
	s3Port, _ := strconv.Atoi(s3)
	for svc, wantPorts := range map[string][]int{
		"taxonomy": {27017, 4222}, "catalog": {27017, 4222, 8081, 8083}, "media": {27017, 4222, s3Port, 8082}, "gateway": {8081, 8082, 8083, 8084},
		"webhook": {27017, 4222, 443},
	} {
		np := netpol(t, m, svc)
		for _, port := range wantPorts {
			if !slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool { return hasPort(r.Ports, port) }) {
				t.Errorf("%s may not reach port %d", svc, port)
			}
		}
		// The webhook service reaches any address on 443 (its receivers).
		if svc != "media" && !(svc == "webhook" && s3Port == 443) &&
			slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool { return hasPort(r.Ports, s3Port) }) {
			t.Errorf("%s may reach the object store's port %d", svc, s3Port)
		}
	}
}

// sources maps each port a policy opens to who may use it: a component of
// the release, "prometheus", or "ingress:<instance>" for a controller.
func sources(np *networkingv1.NetworkPolicy) map[string][]string {
	out := map[string][]string{}
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			port := p.Port.String()
			for _, from := range r.From {
				var who string
				labels := map[string]string{}
				if from.PodSelector != nil {
					labels = from.PodSelector.MatchLabels
				}
				switch {
				case from.IPBlock != nil:
					who = "ipBlock:" + from.IPBlock.CIDR
				case labels["app.kubernetes.io/name"] == "prometheus":
					who = "prometheus"
				case labels["app.kubernetes.io/name"] == "ingress-nginx":
					who = "ingress:" + labels["app.kubernetes.io/instance"]
				default:
					who = labels["app.kubernetes.io/component"]
				}
				out[port] = append(out[port], who)
			}
			slices.Sort(out[port])
		}
	}
	return out
}

// checkHelmTest: one test hook, /probe on /readyz and a public route
// through each of the gateway's Service ports, as a restricted pod.
func checkHelmTest(t *testing.T, m *manifests) {
	t.Helper()
	wantCount(t, "helm test pods", len(m.pods), 1)
	if len(m.pods) != 1 {
		return
	}
	p := m.pods[0]
	if p.Annotations["helm.sh/hook"] != "test" || p.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("pod %s: hook %q, restartPolicy %q; want a test hook that does not restart", p.Name, p.Annotations["helm.sh/hook"], p.Spec.RestartPolicy)
	}
	if !restrictedPod(p.Spec.SecurityContext) || len(p.Spec.Containers) != 1 || !restricted(p.Spec.Containers[0].SecurityContext) {
		t.Errorf("pod %s is not restricted", p.Name)
	}
	if len(p.Spec.Containers) == 0 {
		return
	}
	c := p.Spec.Containers[0]
	gw := service(t, m, "gateway")
	var urls []string
	for _, port := range gw.Spec.Ports {
		for _, path := range []string{"/readyz", "/public/tags-categories"} {
			urls = append(urls, fmt.Sprintf("http://%s:%d%s", gw.Name, port.Port, path))
		}
	}
	if len(c.Command) == 0 || c.Command[0] != "/probe" || !strings.HasSuffix(c.Image, "gateway:0.1.0") {
		t.Errorf("test container %v with image %s, want /probe from the gateway image", c.Command, c.Image)
	}
	for _, u := range urls {
		if !slices.Contains(c.Command, u) {
			t.Errorf("helm test does not call %s (command %v)", u, c.Command)
		}
	}
}

// The public rate limit and the back-office's failed-authentication limit
// are per client only when the gateway believes the ingress controllers'
// X-Forwarded-For: the chart refuses to render an ingress whose limit is on
// without trusted proxies.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	base := func() map[string]any {
		v := valuesFile(t, "default-values.yaml")
		delete(v, "gateway")
		return v
	}
	if _, err := render(ch, base()); err == nil || !strings.Contains(err.Error(), "gateway.trustedProxies") {
		t.Errorf("no trusted proxies: error %v, want the chart's refusal naming gateway.trustedProxies", err)
	}
	gatewayEnv := func(kv ...string) func(map[string]any) {
		return func(v map[string]any) {
			env := map[string]any{}
			for i := 0; i < len(kv); i += 2 {
				env[kv[i]] = kv[i+1]
			}
			v["gateway"] = map[string]any{"env": env}
		}
	}
	off := func(keys ...string) func(map[string]any) {
		return func(v map[string]any) {
			for _, k := range keys {
				v[k] = map[string]any{"enabled": false}
			}
		}
	}
	both := func(a, b func(map[string]any)) func(map[string]any) {
		return func(v map[string]any) { a(v); b(v) }
	}
	// The failed-authentication limit of /bo is per client IP too: behind
	// the admin ingress without TRUSTED_PROXIES, one client's bad tokens
	// would lock every back-office user out (429, valid tokens included).
	for name, vals := range map[string]func(map[string]any){
		"public rate limit off, admin ingress on": gatewayEnv("PUBLIC_RATE_LIMIT", "0"),
		"no public ingress, admin ingress on":     off("ingress"),
		"auth failure limit off, public limit on": gatewayEnv("BO_AUTH_FAILURE_LIMIT", "0"),
	} {
		v := base()
		vals(v)
		if _, err := render(ch, v); err == nil || !strings.Contains(err.Error(), "gateway.trustedProxies") {
			t.Errorf("%s, no trusted proxies: error %v, want the chart's refusal naming gateway.trustedProxies", name, err)
		}
	}
	for name, vals := range map[string]func(map[string]any){
		"both limits off":                           gatewayEnv("PUBLIC_RATE_LIMIT", "0", "BO_AUTH_FAILURE_LIMIT", "0"),
		"no ingress at all":                         off("ingress", "adminIngress"),
		"public limit off, no admin ingress":        both(gatewayEnv("PUBLIC_RATE_LIMIT", "0"), off("adminIngress")),
		"auth failure limit off, no public ingress": both(gatewayEnv("BO_AUTH_FAILURE_LIMIT", "0"), off("ingress")),
		"set in env":                                gatewayEnv("TRUSTED_PROXIES", "10.0.0.0/8"),
	} {
		v := base()
		vals(v)
		if _, err := render(ch, v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	out, err := render(ch, valuesFile(t, "hpa-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := env(t, deployment(t, decode(t, out), "gateway"))["TRUSTED_PROXIES"]; got != "10.244.0.0/16,fd00:10:244::/56" {
		t.Errorf("TRUSTED_PROXIES = %q, want gateway.trustedProxies joined by commas", got)
	}
}

// checkMetricsNotRouted: no Ingress routes /metrics (a path that is a
// prefix of it, "/" included, would).
func checkMetricsNotRouted(t *testing.T, m *manifests) {
	t.Helper()
	for _, ing := range m.ingresses {
		for _, r := range ing.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if strings.HasPrefix("/metrics", strings.TrimSuffix(p.Path, "/")) {
					t.Errorf("Ingress %s routes %s, which reaches /metrics", ing.Name, p.Path)
				}
			}
		}
	}
}

// Egress follows the endpoints the values name: the port of s3.endpoint,
// of every server of nats.url, of otel.endpoint and of bo.oidc.issuerUrl
// (the scheme's when none is written) is open to the service that calls
// it, besides networkPolicy.egress.<dest>.ports (the pods' ports behind an
// in-cluster Service: a MinIO Operator tenant answers on 443 from pods on
// 9000), and nothing else is. An S3 outside the cluster on 443 was
// unreachable with the ports list alone.
func TestEgressFollowsEndpoints(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	vals := valuesFile(t, "default-values.yaml")
	vals["s3"] = map[string]any{"endpoint": "minio.minio-tenant:443", "useTLS": true}
	vals["nats"] = map[string]any{"url": "nats://nats-0.nats:4222, nats://nats-1.nats:14222"}
	vals["otel"] = map[string]any{"endpoint": "https://otel.example.com"}
	vals["bo"] = map[string]any{"oidc": map[string]any{"issuerUrl": "https://id.example.com:8443/realms/doclib", "audience": "doclib"}}
	out, err := render(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	m := decode(t, out)
	want := map[string]string{ // every port each service may reach (53: DNS, UDP and TCP)
		"taxonomy": "443 4318 4222 14222 27017 53/UDP 53",
		"catalog":  "443 4318 4222 8081 8083 14222 27017 53/UDP 53",
		"media":    "443 4318 4222 9000 8082 14222 27017 53/UDP 53",
		"gateway":  "443 4318 4222 8081 8082 8083 8084 8443 14222 53/UDP 53", // NATS: the live streams
		"webhook":  "443 4318 4222 14222 27017 53/UDP 53",
	}
	for svc, ports := range want {
		if got := egressPorts(netpol(t, m, svc)); got != sortedFields(ports) {
			t.Errorf("%s may reach ports %s, want %s", svc, got, sortedFields(ports))
		}
	}

	// Without a port: the scheme's (S3: TLS or not).
	vals["s3"] = map[string]any{"endpoint": "s3.example.com", "useTLS": false}
	vals["nats"] = map[string]any{"url": "tls://nats.example.com"}
	out, err = render(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if got := egressPorts(netpol(t, decode(t, out), "media")); got != sortedFields("80 443 4318 4222 9000 8082 27017 53/UDP 53") {
		t.Errorf("media may reach ports %s, want 80 (S3 without TLS), 9000, 443 and 4318 (OTLP), 4222 (NATS), catalog, MongoDB and DNS", got)
	}
}

// egressPorts lists the ports a policy's egress rules open, sorted, each
// with its protocol when it is not TCP.
func egressPorts(np *networkingv1.NetworkPolicy) string {
	seen := map[string]bool{}
	var ports []string
	for _, r := range np.Spec.Egress {
		for _, p := range r.Ports {
			s := p.Port.String()
			if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
				s += "/" + string(*p.Protocol)
			}
			if !seen[s] {
				seen[s] = true
				ports = append(ports, s)
			}
		}
	}
	slices.Sort(ports)
	return strings.Join(ports, " ")
}

func sortedFields(s string) string {
	f := strings.Fields(s)
	slices.Sort(f)
	return strings.Join(f, " ")
}

// A load balancer that sends to the pods directly (AWS ALB ip targets, GKE
// NEGs) or a controller on the host network is no pod a selector matches:
// each listener takes more sources (NetworkPolicyPeers, e.g. an ipBlock).
// Selectors left empty on both sides would let every pod of the cluster
// in: the render refuses them.
func TestIngressControllerPeers(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	vals := valuesFile(t, "default-values.yaml")
	vals["networkPolicy"] = map[string]any{
		"publicIngressController": map[string]any{"from": []any{map[string]any{"ipBlock": map[string]any{"cidr": "130.211.0.0/22"}}}},
		"adminIngressController":  map[string]any{"from": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16"}}}},
	}
	out, err := render(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	np := netpol(t, decode(t, out), "gateway")
	cidrs := map[string][]string{} // port -> ipBlocks let in
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			for _, f := range r.From {
				if f.IPBlock != nil {
					cidrs[p.Port.String()] = append(cidrs[p.Port.String()], f.IPBlock.CIDR)
				}
			}
		}
	}
	if fmt.Sprint(cidrs) != "map[admin:[10.0.0.0/16] http:[130.211.0.0/22]]" {
		t.Errorf("ipBlocks per gateway port: %v, want 130.211.0.0/22 on http and 10.0.0.0/16 on admin", cidrs)
	}

	// (An empty map merges with the defaults; null removes them.)
	none := map[string]any{"matchLabels": nil}
	vals["networkPolicy"] = map[string]any{"adminIngressController": map[string]any{"namespaceSelector": none, "podSelector": none}}
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "networkPolicy.adminIngressController") {
		t.Errorf("empty selectors for the admin ingress controller: error %v, want a refusal naming it", err)
	}
	// With sources of its own, empty selectors mean no controller pod.
	vals["networkPolicy"] = map[string]any{"adminIngressController": map[string]any{"namespaceSelector": none, "podSelector": none,
		"from": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/16"}}}}}
	out, err = render(ch, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if got := sources(netpol(t, decode(t, out), "gateway"))["admin"]; fmt.Sprint(got) != "[ipBlock:10.0.0.0/16 prometheus test]" {
		t.Errorf("the admin port accepts %v, want the ipBlock, Prometheus and the helm test pod only", got)
	}
}
