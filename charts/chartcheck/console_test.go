package chartcheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// The console: off by default; on, two replicas sharing the session key
// behind the gateway's admin listener, reaching the gateway's admin port
// only.
func TestConsole(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	out, err := render(ch, valuesFile(t, "default-values.yaml"))
	if err != nil {
		t.Fatalf("render the defaults: %v", err)
	}
	off := decode(t, out)
	if slices.ContainsFunc(off.deployments, func(d *appsv1.Deployment) bool { return component("console")(d.Name) }) {
		t.Error("the console is deployed although console.enabled is false")
	}
	if _, ok := env(t, deployment(t, off, "gateway"))["CONSOLE_URL"]; ok {
		t.Error("the gateway has CONSOLE_URL with the console off")
	}

	out, err = render(ch, valuesFile(t, "console-values.yaml"))
	if err != nil {
		t.Fatalf("render console-values.yaml: %v", err)
	}
	if notes := out["doclib/templates/NOTES.txt"]; !strings.Contains(notes, "Console:         https://admin.library.example.com/console/") {
		t.Errorf("NOTES.txt does not say where the console is:\n%s", notes)
	}
	m := decode(t, out)
	d := deployment(t, m, "console")
	checkDeployment(t, d, []string{"doclib-bo", "doclib-console-session"})
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("console replicas %v, want 2 (sessions are sealed cookies)", d.Spec.Replicas)
	}
	checkSessionKey(t, m, d)
	e := env(t, d)
	for k, want := range map[string]string{
		"CONSOLE_API_URL":      "http://doclib-gateway:8090",
		"CONSOLE_ORIGIN":       "https://admin.library.example.com",
		"CONSOLE_TOKEN_SIGNIN": "true",
		"HTTP_ADDR":            ":8085",
	} {
		if e[k] != want {
			t.Errorf("console %s = %q, want %q", k, e[k], want)
		}
	}
	if _, ok := e["IDENTITY_SIGNING_KEY"]; ok {
		t.Error("the console reads the identity signing key, which it never needs")
	}
	if got := env(t, deployment(t, m, "gateway"))["CONSOLE_URL"]; got != "http://doclib-console:8085" {
		t.Errorf("gateway CONSOLE_URL = %q, want the console's Service", got)
	}
	service(t, m, "console")
	checkConsolePolicies(t, m)
	refusals(t, ch)
}

func checkConsolePolicies(t *testing.T, m *manifests) {
	t.Helper()
	if got := fmt.Sprint(sources(netpol(t, m, "console"))); got != "map[http:[gateway prometheus]]" {
		t.Errorf("the console accepts %s, want its http port from the gateway and Prometheus", got)
	}
	if got := sources(netpol(t, m, "gateway"))["admin"]; !slices.Contains(got, "console") {
		t.Errorf("the gateway's admin port accepts %v, not the console", got)
	}
	reaches := func(np *networkingv1.NetworkPolicy, port int) bool {
		return slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool { return hasPort(r.Ports, port) })
	}
	if np := netpol(t, m, "console"); !reaches(np, 8090) || reaches(np, 8080) || reaches(np, 8081) {
		t.Errorf("the console's egress %s: want the gateway's admin port 8090 only", egressPorts(np))
	}
	if !reaches(netpol(t, m, "gateway"), 8085) {
		t.Error("the gateway may not reach the console's port 8085")
	}
}

// checkSessionKey: every replica reads CONSOLE_SESSION_KEY from the
// Secret the chart made.
func checkSessionKey(t *testing.T, m *manifests, d *appsv1.Deployment) {
	t.Helper()
	var ref string
	for _, v := range d.Spec.Template.Spec.Containers[0].Env {
		if v.Name == "CONSOLE_SESSION_KEY" && v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
			ref = v.ValueFrom.SecretKeyRef.Name + "/" + v.ValueFrom.SecretKeyRef.Key
		}
	}
	for _, s := range m.secrets {
		if key, ok := s.Data["console-session-key"]; ok && s.Name+"/console-session-key" == ref {
			if len(key) < 32 {
				t.Errorf("the session key has %d bytes, want at least 32", len(key))
			}
			return
		}
	}
	t.Errorf("CONSOLE_SESSION_KEY from %q, want the Secret the chart made", ref)
}

// refusals: no origin, or one with a path, fails the render.
func refusals(t *testing.T, ch *chart.Chart) {
	t.Helper()
	vals := valuesFile(t, "console-values.yaml")
	vals["console"] = map[string]any{"enabled": true, "tokenSignIn": true}
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "console.origin is required") {
		t.Errorf("console on without an origin: error %v, want the chart's refusal", err)
	}
	vals["console"] = map[string]any{"enabled": true, "origin": "https://admin.example.com"}
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "no sign-in") {
		t.Errorf("console on with neither OIDC nor an explicit tokenSignIn: error %v, want the chart's refusal", err)
	}
	vals["console"] = map[string]any{"enabled": true, "tokenSignIn": true, "origin": "https://admin.example.com/console/"}
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "console") {
		t.Errorf("an origin with a path: error %v, want a schema error", err)
	}
}

// The console's sign-in at the issuer the gateway trusts: its client id in
// the environment, the client secret from a Secret the chart makes, and
// egress to the issuer; no issuer, or no sign-in at all, fails the render.
func TestConsoleOIDC(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	vals := valuesFile(t, "console-values.yaml")
	vals["bo"] = map[string]any{"oidc": map[string]any{"issuerUrl": "https://id.example.com:8443/realms/doclib", "audience": "doclib-console"}}
	vals["console"] = map[string]any{"enabled": true, "origin": "https://admin.library.example.com",
		"oidc": map[string]any{"clientId": "doclib-console", "clientSecret": "ci-client-secret"}}
	out, err := render(ch, vals)
	if err != nil {
		t.Fatalf("render the console with OIDC: %v", err)
	}
	m := decode(t, out)
	d := deployment(t, m, "console")
	e := env(t, d)
	for k, want := range map[string]string{
		"CONSOLE_OIDC_ISSUER_URL": "https://id.example.com:8443/realms/doclib",
		"CONSOLE_OIDC_CLIENT_ID":  "doclib-console",
		"CONSOLE_TOKEN_SIGNIN":    "false",
	} {
		if e[k] != want {
			t.Errorf("console %s = %q, want %q", k, e[k], want)
		}
	}
	var ref string
	for _, v := range d.Spec.Template.Spec.Containers[0].Env {
		if v.Name == "CONSOLE_OIDC_CLIENT_SECRET" && v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil {
			ref = v.ValueFrom.SecretKeyRef.Name + "/" + v.ValueFrom.SecretKeyRef.Key
		}
	}
	var made []string
	for _, s := range m.secrets {
		if _, ok := s.Data["console-oidc-client-secret"]; ok {
			made = append(made, s.Name+"/console-oidc-client-secret")
		}
	}
	if ref == "" || !slices.Contains(made, ref) {
		t.Errorf("CONSOLE_OIDC_CLIENT_SECRET from %q, want a Secret the chart made (%v)", ref, made)
	}
	if ports := egressPorts(netpol(t, m, "console")); !strings.Contains(ports, "8443") {
		t.Errorf("the console's egress %s does not reach the issuer's port 8443", ports)
	}
	if strings.Contains(out["doclib/templates/NOTES.txt"], "WARNING") {
		t.Error("NOTES.txt warns with the token sign-in off")
	}
	bothOn(t, ch, vals)
	vals["bo"] = valuesFile(t, "console-values.yaml")["bo"]
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "needs bo.oidc.issuerUrl") {
		t.Errorf("console.oidc without bo.oidc.issuerUrl: error %v, want the chart's refusal", err)
	}
	vals["console"] = map[string]any{"enabled": true, "origin": "https://admin.library.example.com", "tokenSignIn": false}
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "no sign-in") {
		t.Errorf("no sign-in at all: error %v, want the chart's refusal", err)
	}
}

// bothOn: console.tokenSignIn=true beside a client id keeps the token
// form, and NOTES.txt says so.
func bothOn(t *testing.T, ch *chart.Chart, vals map[string]any) {
	t.Helper()
	vals["console"].(map[string]any)["tokenSignIn"] = true
	out, err := render(ch, vals)
	if err != nil {
		t.Fatalf("render with both sign-ins: %v", err)
	}
	if got := env(t, deployment(t, decode(t, out), "console"))["CONSOLE_TOKEN_SIGNIN"]; got != "true" {
		t.Errorf("CONSOLE_TOKEN_SIGNIN = %q with tokenSignIn=true, want true", got)
	}
	if !strings.Contains(out["doclib/templates/NOTES.txt"], "WARNING: the console offers the sign-in with a pasted") {
		t.Errorf("NOTES.txt does not warn with both sign-ins on:\n%s", out["doclib/templates/NOTES.txt"])
	}
	delete(vals["console"].(map[string]any), "tokenSignIn")
}
