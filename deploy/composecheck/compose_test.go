package composecheck

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

const root = "../.."

// The containers of compose.yaml: backing servers and the four services.
var (
	backing  = []string{"minio", "mongo", "nats"}
	services = []string{"catalog", "console", "gateway", "media", "taxonomy", "webhook"}
)

// pinnedTag is a full version (1.26.8, 8.0.20, 2.15.2-alpine, RELEASE...),
// not a moving major or minor tag.
var pinnedTag = regexp.MustCompile(`^(v?\d+\.\d+\.\d+|RELEASE\.\d{4}-\d\d-\d\dT)`)

func load(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "compose.yaml")},
		cli.WithWorkingDirectory(root), cli.WithEnv(nil), cli.WithName("doclib"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := cli.ProjectFromOptions(context.Background(), opts)
	if err != nil {
		t.Fatalf("compose.yaml does not load: %v", err)
	}
	return p
}

func TestServices(t *testing.T) {
	p := load(t)
	got := slices.Sorted(maps.Keys(p.Services))
	want := slices.Sorted(slices.Values(append(slices.Clone(backing), services...)))
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	for _, name := range services {
		s := p.Services[name]
		if s.Build == nil || s.Build.Dockerfile != "deploy/Dockerfile" || s.Build.Args["SERVICE"] == nil || *s.Build.Args["SERVICE"] != name {
			t.Errorf("%s: build %+v, want deploy/Dockerfile with SERVICE=%s", name, s.Build, name)
		}
		if !s.ReadOnly || !slices.Equal(s.CapDrop, []string{"ALL"}) || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: read_only %v, cap_drop %v, security_opt %v; want a read-only root, ALL dropped, no-new-privileges",
				name, s.ReadOnly, s.CapDrop, s.SecurityOpt)
		}
	}
}

// Every container has a healthcheck; the services' and MinIO's run /probe
// (their images have no shell) on an address of their own.
func TestHealthchecks(t *testing.T) {
	p := load(t)
	for name, s := range p.Services {
		hc := s.HealthCheck
		if hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] != "CMD" || hc.Interval == nil || hc.Retries == nil {
			t.Errorf("%s: healthcheck %+v, want an exec-form test with an interval and retries", name, hc)
			continue
		}
		if s.Build != nil && (hc.Test[1] != "/probe" || len(hc.Test) < 3 || !strings.HasPrefix(hc.Test[2], "http://127.0.0.1:")) {
			t.Errorf("%s: healthcheck %v, want /probe on its own address", name, hc.Test)
		}
	}
	for _, name := range services {
		test := p.Services[name].HealthCheck.Test
		if !strings.HasSuffix(test[len(test)-1], "/readyz") {
			t.Errorf("%s: healthcheck %v, want its /readyz", name, test)
		}
	}
}

// A container starts once what it depends on is healthy, not just started.
func TestStartOrderOnHealth(t *testing.T) {
	p := load(t)
	for name, s := range p.Services {
		for dep, d := range s.DependsOn {
			if d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s depends on %s with condition %q, want %s", name, dep, d.Condition, types.ServiceConditionHealthy)
			}
		}
	}
	for _, name := range []string{"taxonomy", "catalog", "media"} {
		if _, ok := p.Services[name].DependsOn["mongo"]; !ok {
			t.Errorf("%s does not wait for mongo", name)
		}
	}
}

// Images are pinned: pulled ones by full version (or digest), built ones
// by their Dockerfile's base images.
func TestImagesArePinned(t *testing.T) {
	p := load(t)
	for name, s := range p.Services {
		if s.Build != nil {
			for _, from := range baseImages(t, filepath.Join(root, s.Build.Dockerfile)) {
				if !pinned(from) {
					t.Errorf("%s: %s builds FROM %s, which is not pinned by version or digest", name, s.Build.Dockerfile, from)
				}
			}
			continue
		}
		if !pinned(s.Image) {
			t.Errorf("%s: image %q is not pinned by version or digest", name, s.Image)
		}
	}
}

// The pins agree with what `make dev` and the tests run.
func TestPinsMatchTheRepository(t *testing.T) {
	p := load(t)
	nats := goModVersion(t, filepath.Join(root, "libs/go.mod"), "github.com/nats-io/nats-server/v2")
	if img := p.Services["nats"].Image; !strings.HasPrefix(img, "nats:"+strings.TrimPrefix(nats, "v")) {
		t.Errorf("nats image %s, want the server version the tests embed (%s)", img, nats)
	}
	minio := makeVariable(t, "MINIO_VERSION")
	if arg := dockerfileArg(t, filepath.Join(root, "deploy/minio.Dockerfile"), "MINIO_VERSION"); arg != minio {
		t.Errorf("deploy/minio.Dockerfile builds MinIO %s, the Makefile %s", arg, minio)
	}
	goVersion := goModVersion(t, filepath.Join(root, "go.work"), "go")
	minor := strings.Join(strings.SplitN(goVersion, ".", 3)[:2], ".")
	for _, f := range []string{"deploy/Dockerfile", "deploy/minio.Dockerfile"} {
		for _, from := range baseImages(t, filepath.Join(root, f)) {
			if strings.HasPrefix(from, "golang:") && !strings.HasPrefix(from, "golang:"+minor+".") {
				t.Errorf("%s builds with %s, go.work says go %s", f, from, goVersion)
			}
		}
	}
}

func pinned(image string) bool {
	if strings.Contains(image, "@sha256:") {
		return true
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return false // no tag: latest
	}
	return pinnedTag.MatchString(image[i+1:])
}

// baseImages lists the images a Dockerfile's stages start FROM (not its
// own earlier stages).
func baseImages(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var images []string
	stages := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.EqualFold(f[0], "FROM") {
			continue
		}
		f = slices.DeleteFunc(f[1:], func(s string) bool { return strings.HasPrefix(s, "--") })
		if !stages[strings.ToLower(f[0])] {
			images = append(images, f[0])
		}
		if len(f) == 3 && strings.EqualFold(f[1], "AS") {
			stages[strings.ToLower(f[2])] = true
		}
	}
	if len(images) == 0 {
		t.Fatalf("%s has no FROM", path)
	}
	return images
}

// goModVersion is the version of module mod in a go.mod or go.work ("go"
// for the go directive).
func goModVersion(t *testing.T, path, mod string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == mod {
			return f[1]
		}
	}
	t.Fatalf("%s names no %s", path, mod)
	return ""
}

func makeVariable(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `\s*:?=\s*(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return string(m[1])
}

func dockerfileArg(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ARG ` + name + `=(\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no ARG %s with a default", path, name)
	}
	return string(m[1])
}

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

// MongoDB runs as a replica set of one member, and the services name the
// set: every write is a transaction, which a standalone refuses.
func TestMongoIsAReplicaSet(t *testing.T) {
	p := load(t)
	mongo := p.Services["mongo"]
	if !slices.Equal(mongo.Command, []string{"--replSet", "rs0", "--bind_ip_all"}) {
		t.Errorf("mongo command %v, want --replSet rs0 --bind_ip_all", mongo.Command)
	}
	if hc := strings.Join(mongo.HealthCheck.Test, " "); !strings.Contains(hc, "rs.initiate") || !strings.Contains(hc, "isWritablePrimary") {
		t.Errorf("mongo healthcheck %q: want it to initiate the set and wait for the primary", hc)
	}
	for name, s := range p.Services {
		uri, ok := s.Environment["MONGODB_URI"]
		if !ok {
			continue
		}
		if uri == nil || !strings.Contains(*uri, "replicaSet=rs0") {
			t.Errorf("%s: MONGODB_URI %s, want one naming the replica set rs0", name, deref(uri))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "(unset)"
	}
	return *s
}
