package e2e

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/doclib/libs/devserver"
)

// The documentation's commands are checked here: README.md's and the
// guides' shell blocks marked runnable, the chart's install command of the
// platform guide, and the configuration reference against the code.

// docFiles are the files whose runnable blocks are run: the README and the
// guides.
func docFiles(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../README.md"}, guides...)
}

// fencedBlocks returns the bodies of the ``` blocks of a Markdown text whose
// info string is exactly info (e.g. "sh runnable").
func fencedBlocks(text, info string) []string {
	var blocks []string
	var cur *strings.Builder
	inBlock := false
	for line := range strings.Lines(text) {
		trimmed := strings.TrimRight(line, "\n")
		switch {
		case !inBlock && strings.HasPrefix(trimmed, "```"):
			inBlock = true
			if strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) == info {
				cur = &strings.Builder{}
			}
		case inBlock && trimmed == "```":
			if cur != nil {
				blocks = append(blocks, cur.String())
			}
			inBlock, cur = false, nil
		case cur != nil:
			cur.WriteString(line)
		}
	}
	return blocks
}

// TestDocsFencedBlocks keeps the extraction honest: other blocks, and the
// lines between blocks, are never run.
func TestDocsFencedBlocks(t *testing.T) {
	t.Parallel()
	text := "a\n```sh\necho no\n```\n```\nnot code\n```\n```sh runnable\necho yes\necho two\n```\nb\n```sh runnable\necho three\n```\n"
	got := fencedBlocks(text, "sh runnable")
	want := []string{"echo yes\necho two\n", "echo three\n"}
	if !slices.Equal(got, want) {
		t.Errorf("fencedBlocks = %q, want %q", got, want)
	}
}

// TestDocsRunnableBlocks runs, against a fresh stack, every ```sh runnable
// block of README.md and docs/*.md, each file's blocks in order in one
// shell, from the repository's root, as a reader pastes them against
// `make dev`: make dev's addresses are replaced by the stack's, the stack
// takes make dev's tokens, and curl fails on an error status. The README
// must have some.
func TestDocsRunnableBlocks(t *testing.T) {
	t.Parallel()
	scripts := map[string]string{}
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if blocks := fencedBlocks(string(b), "sh runnable"); len(blocks) > 0 {
			scripts[f] = strings.Join(blocks, "")
		}
	}
	if scripts["../README.md"] == "" {
		t.Fatal("README.md has no ```sh runnable block: its calls would no longer be checked")
	}
	st := NewStack(t, map[string][]string{"gateway": {"BO_API_TOKENS=dev:editor:dev-token,dev-viewer:viewer:dev-viewer-token"}})
	addr := strings.NewReplacer(
		"http://127.0.0.1:8080", st.URL, "http://127.0.0.1:8090", st.AdminURL,
		"http://localhost:8080", st.URL, "http://localhost:8090", st.AdminURL,
		"localhost:8080", st.URL, "localhost:8090", st.AdminURL)
	for _, f := range slices.Sorted(func(yield func(string) bool) {
		for f := range scripts {
			if !yield(f) {
				return
			}
		}
	}) {
		script := "set -euo pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\n" + addr.Replace(scripts[f])
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "PUBLIC_URL="+st.URL, "ADMIN_URL="+st.AdminURL)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: a runnable block failed (%v):\n%s\n--- the blocks, as run:\n%s", f, err, out, script)
		}
	}
}

// TestDocsChartInstallCommand renders and lints the chart with exactly the
// install command of the platform guide (its ```sh helm-install block),
// helm's `upgrade --install` made `template` then `lint --strict`, and
// checks that every image comes from the registry the command names (a default
// image would be pulled from a registry where it does not exist).
func TestDocsChartInstallCommand(t *testing.T) {
	t.Parallel()
	bin, err := devserver.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(bin, "helm")
	if _, err := os.Stat(helm); err != nil {
		if os.Getenv("DOCLIB_REQUIRE_HELM") != "" {
			t.Fatalf("no helm in %s: make helm-lint builds it", filepath.Dir(helm))
		}
		t.Skipf("no helm in %s (make helm-lint builds it)", filepath.Dir(helm))
	}
	b, err := os.ReadFile("../docs/platform.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := fencedBlocks(string(b), "sh helm-install")
	if len(blocks) != 1 || !strings.HasPrefix(blocks[0], "helm upgrade --install doclib charts/doclib ") {
		t.Fatalf("docs/platform.md has %d ```sh helm-install blocks; want one, starting with helm upgrade --install doclib charts/doclib", len(blocks))
	}
	// A helm on PATH that renders where the guide installs.
	shim := t.TempDir()
	// It renders (the manifests on stdout), then lints with the same values.
	wrapper := "#!/bin/sh\nset -e\nif [ \"$1 $2\" = \"upgrade --install\" ]; then shift 2\n" +
		strconv.Quote(helm) + " template \"$@\"\nshift\nexec " + strconv.Quote(helm) + " lint --strict \"$@\" >&2\nfi\nexit 64\n"
	if err := os.WriteFile(filepath.Join(shim, "helm"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", blocks[0])
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the platform guide's install command does not render and lint: %v\n%s", err, stderr.String())
	}
	images := regexp.MustCompile(`(?m)^\s+image:\s*"?([^"\s]+)`).FindAllStringSubmatch(string(out), -1)
	if len(images) == 0 {
		t.Fatal("the render has no image")
	}
	for _, m := range images {
		if !strings.HasPrefix(m[1], "registry.example.com/") {
			t.Errorf("the install command renders image %s, not from the registry it names (registry.example.com)", m[1])
		}
	}
}

// notSettings are upper-case string literals of the services that are not
// environment variables.
var notSettings = map[string]string{
	"LIBRARY_DLQ": "the dead-letter stream's name",
	// The process environment media passes on to the PDF tools it runs,
	// not settings of its own.
	"LC_ALL": "passed to the PDF tools", "LC_CTYPE": "passed to the PDF tools",
	"FONTCONFIG_FILE": "passed to the PDF tools", "FONTCONFIG_PATH": "passed to the PDF tools",
	"XDG_CACHE_HOME": "passed to the PDF tools",
}

var settingName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

// settingsInCode returns every environment variable name the services'
// code holds as a string literal (libs/config reads them by name; a name
// held in a constant counts too), with the services whose own code holds
// it (none for a name only libs/ holds).
func settingsInCode(t *testing.T) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	for _, dir := range []string{"../services", "../libs"} {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				switch d.Name() {
				case "testkit", "devserver", "testdata":
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			svc := ""
			if rel, ok := strings.CutPrefix(filepath.ToSlash(path), "../services/"); ok {
				svc, _, _ = strings.Cut(rel, "/")
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil || !settingName.MatchString(s) || notSettings[s] != "" {
					return true
				}
				if _, seen := found[s]; !seen {
					found[s] = nil
				}
				if svc != "" && !slices.Contains(found[s], svc) {
					found[s] = append(found[s], svc)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return found
}

// referenceRow is a row of the configuration reference.
type referenceRow struct{ readBy, def, meaning string }

// configurationReference reads the table of docs/platform.md's
// "Configuration reference": | variable | read by | default | meaning |,
// by variable, with how many rows name each.
func configurationReference(t *testing.T) (map[string]referenceRow, map[string]int) {
	t.Helper()
	b, err := os.ReadFile("../docs/platform.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n## Configuration reference\n")
	if start < 0 {
		t.Fatal("docs/platform.md has no Configuration reference section")
	}
	section := text[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	rows, count := map[string]referenceRow{}, map[string]int{}
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]*)`")
	for line := range strings.Lines(section) {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) < 6 {
			t.Errorf("docs/platform.md: a configuration row without its four cells: %s", line)
			continue
		}
		row := referenceRow{strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3]), strings.TrimSpace(strings.Join(cells[4:len(cells)-1], "|"))}
		for _, m := range name.FindAllStringSubmatch(cells[1], -1) {
			rows[m[1]] = row
			count[m[1]]++
		}
	}
	return rows, count
}

// TestDocsConfigurationReference: every environment variable the services
// read is in the platform guide's configuration reference, once, with a
// default, a meaning and the services that read it; and the reference
// names no variable nobody reads (the standard OTEL_* aside).
func TestDocsConfigurationReference(t *testing.T) {
	t.Parallel()
	code := settingsInCode(t)
	if len(code) < 50 {
		t.Fatalf("found %d variables in the services' code; the scan is broken", len(code))
	}
	rows, count := configurationReference(t)
	for _, v := range slices.Sorted(func(yield func(string) bool) {
		for v := range code {
			if !yield(v) {
				return
			}
		}
	}) {
		row, ok := rows[v]
		switch {
		case !ok:
			t.Errorf("%s is read by %v and missing from docs/platform.md's configuration reference: add a row (read by, default, meaning)", v, code[v])
			continue
		case count[v] != 1:
			t.Errorf("%s is in %d rows of the configuration reference; want one", v, count[v])
		case row.def == "" || row.meaning == "":
			t.Errorf("%s: the configuration reference gives no default or no meaning", v)
		}
		for _, svc := range code[v] {
			if row.readBy != "every service" && !slices.Contains(strings.Split(strings.ReplaceAll(row.readBy, " ", ""), ","), svc) {
				t.Errorf("%s is read by %s; the configuration reference says %q", v, svc, row.readBy)
			}
		}
	}
	for v := range rows {
		if _, ok := code[v]; !ok && !strings.HasPrefix(v, "OTEL_") {
			t.Errorf("the configuration reference names %s, which no service reads", v)
		}
	}
}

// docsPage is what TestDocsPageOnTheAdminListener reads from the /docs page
// once it rendered.
type docsPage struct {
	Server       string   // the server "Try it out" calls
	Examples     []string // parameters that still carry an example value
	FirstOpTop   float64  // where the first operation starts, in CSS px
	ScreenHeight float64
	Me           int // the status of GET /bo/me sent from the page
}

// TestDocsPageOnTheAdminListener opens /docs where the README names it, the
// admin listener, in Chromium: "Try it out" calls that listener (so /bo
// works from the page: a call from the page to /bo/me with a token
// succeeds), no parameter input is prefilled with an example, and the
// first operation is on the first screen.
func TestDocsPageOnTheAdminListener(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	b := newBrowser(t)
	b.run(t, "open /docs", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(st.AdminURL+"/docs"),
		chromedp.WaitVisible(chromedp.CSS(".opblock")))
	got := get(t, b, "read the page", chromedp.Evaluate[docsPage](`(async () => {
		const spec = window.ui.specSelectors.specJson().toJS();
		const examples = [];
		const look = (where, p) => {
			if (!p) return;
			if (p.example !== undefined || p.examples !== undefined || (p.schema && (p.schema.example !== undefined || p.schema.examples !== undefined))) examples.push(where + " " + p.name);
		};
		for (const [path, item] of Object.entries(spec.paths)) {
			(item.parameters || []).forEach(p => look(path, p));
			for (const op of Object.values(item)) (op && op.parameters || []).forEach(p => look(path, p));
		}
		for (const [k, p] of Object.entries((spec.components || {}).parameters || {})) look("#/components/parameters/" + k, p);
		const me = await fetch(window.ui.specSelectors.servers().first().get("url") + "/bo/me", {headers: {Authorization: "Bearer `+Token+`"}}).catch(() => ({status: 0}));
		return {Server: window.ui.specSelectors.servers().first().get("url"), Examples: examples,
			FirstOpTop: document.querySelector(".opblock").getBoundingClientRect().top, ScreenHeight: window.innerHeight, Me: me.status};
	})()`, chromedp.EvalAwaitPromise))
	if got.Server != st.AdminURL {
		t.Errorf("Try it out calls %q from %s/docs; want that listener", got.Server, st.AdminURL)
	}
	if got.Me != 200 {
		t.Errorf("GET /bo/me from the page: %d, want 200", got.Me)
	}
	if len(got.Examples) > 0 {
		t.Errorf("%d parameters would be prefilled with their example: %v", len(got.Examples), got.Examples)
	}
	if got.FirstOpTop <= 0 || got.FirstOpTop > got.ScreenHeight-40 {
		t.Errorf("the first operation starts at %.0f px, below the first screen (%.0f px): %s", got.FirstOpTop, got.ScreenHeight, b.screenshot(t))
	}
}

// TestDocsLinks: every relative link of the README, the guides and the
// decision records leads to a file that exists and, for a #fragment into a
// Markdown file, to one of its headings (as GitHub makes their anchors).
func TestDocsLinks(t *testing.T) {
	t.Parallel()
	records, err := filepath.Glob("../docs/decisions/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files := append(docFiles(t), records...)
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code := regexp.MustCompile("`[^`\n]*`") // an example shown as code is not a link
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(string(b), ""), -1) {
			target, frag, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := f
			if target != "" {
				path = filepath.Join(filepath.Dir(f), target)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !slices.Contains(headingAnchors(t, path), frag) {
				t.Errorf("%s links to %s: no such heading", f, m[1])
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// Markdown file: lower case, punctuation dropped, spaces made dashes.
func headingAnchors(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var anchors []string
	for _, m := range regexp.MustCompile(`(?m)^#+ (.*)$`).FindAllStringSubmatch(string(b), -1) {
		h := strings.ToLower(strings.TrimSpace(m[1]))
		h = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`).ReplaceAllString(h, "")
		anchors = append(anchors, strings.ReplaceAll(h, " ", "-"))
	}
	return anchors
}

// TestDocsREADMEIsAFrontDoor: the README stays short and leads to each
// guide in one click, and no page a reader reads names an issue or a test.
func TestDocsREADMEIsAFrontDoor(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 200 {
		t.Errorf("README.md has %d lines; a front door has at most 200: move the detail to a guide", n)
	}
	for _, guide := range []string{"docs/app-developer.md", "docs/editor.md", "docs/platform.md", "docs/contributor.md", "docs/decisions/README.md"} {
		if !strings.Contains(readme, "]("+guide+")") {
			t.Errorf("README.md does not link %s", guide)
		}
	}
	records, err := filepath.Glob("../docs/decisions/*.md")
	if err != nil {
		t.Fatal(err)
	}
	internal := regexp.MustCompile(`\b(Test|Benchmark|Fuzz)[A-Z]\w+|\b[Ii]ssues? #?\d+`)
	for _, f := range append(docFiles(t), records...) {
		if filepath.Base(f) == "development-database.md" {
			continue // the development database's own page, kept by its owners
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range internal.FindAllString(string(b), -1) {
			t.Errorf("%s names %q: readers need what it means, not an issue or a test's name", f, m)
		}
	}
}
