package config

import (
	"strings"
	"testing"
	"time"
)

func TestEnvCollectsEveryProblem(t *testing.T) {
	e := FromMap(map[string]string{"PORT": "x", "WAIT": "soon", "UP": "ftp://h"})
	e.Int("PORT", 1, 0, 10)
	e.Duration("WAIT", time.Second)
	e.URL("UP", "")
	e.Required("MISSING")
	err := e.Err()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, key := range []string{"PORT", "WAIT", "UP", "MISSING"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q does not name %s", err, key)
		}
	}
}

func TestEnvDefaultsAndSecrets(t *testing.T) {
	e := FromMap(map[string]string{"TOKENS": " a, b,,c\n", "N": "7"})
	if got := e.OptionalSecret("TOKENS"); got != "a, b,,c" {
		t.Errorf("OptionalSecret = %q, want the value without its outer spaces", got)
	}
	if got := e.OptionalSecret("UNSET"); got != "" {
		t.Errorf("OptionalSecret of an unset variable = %q, want empty", got)
	}
	if got := e.Int("N", 1, 0, 10); got != 7 {
		t.Errorf("Int = %d, want 7", got)
	}
	if got := e.String("ADDR", ":80"); got != ":80" {
		t.Errorf("String default = %q", got)
	}
	if err := e.Err(); err != nil {
		t.Fatal(err)
	}
	for _, a := range e.Attrs() {
		if strings.Contains(a.(interface{ String() string }).String(), "a,") {
			t.Errorf("secret shown in %v", a)
		}
	}
}

func TestRedact(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"mongodb://127.0.0.1:27017/", "mongodb://127.0.0.1:27017/"},
		{"mongodb://admin:s3cr%40t@db:27017/app?authSource=admin", "mongodb://xxxxx@db:27017/app?authSource=admin"},
		{"mongodb://u:p@h1:1,h2:2/?replicaSet=rs&tls=true", "mongodb://xxxxx@h1:1,h2:2/?replicaSet=rs&tls=true"},
		{"mongodb+srv://u:pa/ss@cluster.example/?w=1", "mongodb+srv://xxxxx@cluster.example/?w=1"},
		{"mongodb://h/?authMechanismProperties=AWS_SESSION_TOKEN:abc", "mongodb://h/?authMechanismProperties=xxxxx"},
		{"mongodb://h/?tlsCertificateKeyFilePassword=pw&w=1#x", "mongodb://h/?tlsCertificateKeyFilePassword=xxxxx&w=1#x"},
		{"nats://token@nats:4222", "nats://xxxxx@nats:4222"},
		{"nats://a:b@n1:4222, nats://c:d@n2:4222", "nats://xxxxx@n1:4222, nats://xxxxx@n2:4222"},
		{"https://example.org/a@b?c=d", "https://xxxxx@b?c=d"},
		{"plain value", "plain value"},
	} {
		if got := Redact(c.in); got != c.want {
			t.Errorf("Redact(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestAttrsMaskSecrets(t *testing.T) {
	e := FromMap(map[string]string{
		"MONGODB_URI":      "mongodb://admin:hunter2@db:27017/",
		"NATS_URL":         "nats://natsuser:hunter3@nats:4222",
		"S3_ACCESS_KEY":    "AKIAHUNTER4",
		"S3_SECRET_KEY":    "hunter5",
		"BO_API_TOKENS":    "ops:editor:hunter6,v:viewer:hunter7",
		"CATALOG_URL":      "http://svc:hunter8@catalog:8082",
		"GATEWAY_TOKEN":    "hunter9",
		"SOME_PASSWORD":    "hunter10",
		"TRUSTED_PROXIES":  "10.0.0.0/8",
		"OIDC_ISSUER_URL":  "https://user:hunter11@issuer.example",
		"UPSTREAM_SECRETS": "hunter12",
	})
	e.Required("MONGODB_URI")
	e.Required("NATS_URL")
	e.Required("S3_ACCESS_KEY")
	e.Secret("S3_SECRET_KEY")
	e.OptionalSecret("BO_API_TOKENS")
	e.URL("CATALOG_URL", "")
	e.String("GATEWAY_TOKEN", "")
	e.String("SOME_PASSWORD", "")
	e.List("TRUSTED_PROXIES", nil)
	e.String("OIDC_ISSUER_URL", "")
	e.List("UPSTREAM_SECRETS", nil)
	var shown strings.Builder
	for _, a := range e.Attrs() {
		shown.WriteString(a.(interface{ String() string }).String() + " ")
	}
	if strings.Contains(shown.String(), "hunter") {
		t.Errorf("a secret is shown: %s", shown.String())
	}
	for _, keep := range []string{"db:27017", "nats:4222", "catalog:8082", "10.0.0.0/8", "set, masked"} {
		if !strings.Contains(shown.String(), keep) {
			t.Errorf("%q is not shown: %s", keep, shown.String())
		}
	}
}

func TestOptionalURL(t *testing.T) {
	e := FromMap(map[string]string{"SET": "http://console:8085", "EMPTY": "", "BAD": "console:8085"})
	if u := e.OptionalURL("SET"); u == nil || u.Host != "console:8085" {
		t.Errorf("OptionalURL(SET) = %v", u)
	}
	if e.OptionalURL("UNSET") != nil || e.OptionalURL("EMPTY") != nil {
		t.Error("an unset or empty optional URL is not nil")
	}
	if e.OptionalURL("BAD") != nil {
		t.Error("a URL without a scheme was accepted")
	}
	if err := e.Err(); err == nil || !strings.Contains(err.Error(), "BAD") || strings.Contains(err.Error(), "UNSET") {
		t.Errorf("Err = %v, want BAD only", err)
	}
}
