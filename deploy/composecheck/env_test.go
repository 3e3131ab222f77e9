package composecheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Each service's environment in compose.yaml sets every variable the
// README's Configuration marks required for it, non-empty, and no variable
// the README does not name for it (a misspelt name is read by nobody, and
// the service falls back to its default or refuses to start).
func TestEnvironmentMatchesTheConfiguration(t *testing.T) {
	p := load(t)
	names, required := configuration(t)
	for _, name := range services {
		env := p.Services[name].Environment
		for v := range required[name] {
			if val := env[v]; val == nil || *val == "" {
				t.Errorf("%s: %s is required (README, Configuration) and compose.yaml does not set it", name, v)
			}
		}
		for v := range env {
			if !names[name][v] && !strings.HasPrefix(v, "OTEL_") {
				t.Errorf("%s: compose.yaml sets %s, which the README's Configuration does not name for %s", name, v, name)
			}
		}
	}
}

var envName = regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")

// configuration reads the README's Configuration tables: the variables of
// each service (those common to every service included), and which of
// them are required.
func configuration(t *testing.T) (names, required map[string]map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## Configuration\n")
	if start < 0 {
		t.Fatal("README.md has no Configuration section")
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	names, required = map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, s := range append(slices.Clone(services), "common") {
		names[s], required[s] = map[string]bool{}, map[string]bool{}
	}
	owner := ""
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "Common to every service"):
			owner = "common"
		case slices.Contains(services, strings.TrimSuffix(line, ":")):
			owner = strings.TrimSuffix(line, ":")
		case owner != "" && strings.HasPrefix(line, "| `"):
			cells := strings.Split(line, "|")
			if len(cells) < 3 {
				continue
			}
			for _, m := range envName.FindAllStringSubmatch(cells[1], -1) {
				names[owner][m[1]] = true
				if strings.TrimSpace(cells[2]) == "required" {
					required[owner][m[1]] = true
				}
			}
		}
	}
	for _, s := range services {
		if len(names[s]) == 0 {
			t.Fatalf("README.md's Configuration has no table for %s", s)
		}
		for v := range names["common"] {
			names[s][v] = true
		}
		for v := range required["common"] {
			required[s][v] = true
		}
	}
	return names, required
}
