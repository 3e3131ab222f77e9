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
