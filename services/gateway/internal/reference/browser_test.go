package reference_test

import (
	"context"
	"encoding/json"
	"html"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/doclib/api"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/gateway/internal/reference"
)

// chromium finds Debian's Chromium, or skips the test (testkit.Chromium).
func chromium(t *testing.T) string { return testkit.Chromium(t) }

// render opens url in headless Chromium, lets its scripts run, and returns
// the page's DOM. Background networking is off, so the page's own requests
// are the only ones.
func render(t *testing.T, url string, extra ...string) string {
	t.Helper()
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-default-apps",
		"--disable-sync", "--disable-extensions", "--no-first-run", "--no-default-browser-check",
		"--metrics-recording-only", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=30000",
	}, extra...)
	out, err := exec.CommandContext(ctx, bin, append(args, url)...).Output()
	if err != nil {
		t.Fatalf("chromium %s: %v", url, err)
	}
	return string(out)
}

// TestDocsPageShowsEveryRoute opens /docs in a real browser and checks that
// the page rendered every route of the OpenAPI document, with nothing but
// the gateway's own assets (the page's Content-Security-Policy would block
// anything else, and the renderer would then show nothing).
func TestDocsPageShowsEveryRoute(t *testing.T) {
	t.Parallel()
	ref, err := reference.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := httpx.NewEngine("gateway", slog.New(slog.DiscardHandler))
	ref.Register(e)
	srv := httptest.NewServer(e)
	defer srv.Close()

	dom := render(t, srv.URL+"/docs", "--dump-dom")
	if shot := os.Getenv("DOCLIB_DOCS_SCREENSHOT"); shot != "" { // to look at it
		render(t, srv.URL+"/docs", "--screenshot="+shot, "--window-size=1280,2400")
	}

	raw, err := api.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info  struct{ Title string }
		Paths map[string]map[string]any
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	text := html.UnescapeString(strings.ReplaceAll(dom, "\u200b", ""))
	if !strings.Contains(text, doc.Info.Title) {
		t.Errorf("the page does not show the document's title %q; it rendered:\n%.2000s", doc.Info.Title, dom)
	}
	var missing []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head":
			default:
				continue
			}
			if !strings.Contains(text, `data-path="`+path+`"`) {
				missing = append(missing, strings.ToUpper(method)+" "+path)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the page does not show %d route(s):\n\t%s", len(missing), strings.Join(missing, "\n\t"))
	}
}
