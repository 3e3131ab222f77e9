package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/doclib/libs/testkit"
)

// browser is one headless Chromium for a test, 1440 px wide. Every
// JavaScript dialog it opens (an alert from injected script) is counted
// and dismissed.
type browser struct {
	ctx     context.Context
	dialogs atomic.Int64
}

func newBrowser(t testing.TB) *browser {
	t.Helper()
	// The defaults are headless with background networking off.
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(testkit.Chromium(t)), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-component-update", true), chromedp.WindowSize(1440, 1000), chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{ctx: ctx}
	// The first run starts the browser: no timeout on it (that would stop
	// the browser with it).
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			b.dialogs.Add(1)
			_ = chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				_, err := cdp.Call(ctx, tg, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
				return err
			}))
		}
	}()
	return b
}

// run runs actions within a minute; on failure it leaves a screenshot and
// says where.
func (b *browser) run(t testing.TB, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v (screenshot: %s)", what, err, b.screenshot(t))
	}
}

// slowAdmin is an address in front of admin that holds every POST's
// answer for delay, as a phone network does: a step that does not wait for
// the page a form loads fails at once, not in 1 run of make test in 3. The
// session cookie is the same (cookies are per host, not per port).
func slowAdmin(t testing.TB, admin string, delay time.Duration) string {
	t.Helper()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(delay)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// get runs an action that gives a value, as run does.
func get[T any](t testing.TB, b *browser, what string, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("%s: %v (screenshot: %s)", what, err, b.screenshot(t))
	}
	return v
}

// screenshot writes the page as it is now to a file it returns.
func (b *browser) screenshot(t testing.TB) string {
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return "none: " + err.Error()
	}
	path := filepath.Join(os.TempDir(), "doclib-console-"+strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return "none: " + err.Error()
	}
	return path
}

// failShot leaves a screenshot when t has failed, whatever failed it.
func (b *browser) failShot(t testing.TB) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("screenshot of the page at the failure: %s", b.screenshot(t))
		}
	})
}

// axeSource is the vendored axe-core, checked against its SHA256SUMS.
func axeSource(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("testdata/axe/axe.min.js")
	if err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile("testdata/axe/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if !strings.Contains(string(sums), hex.EncodeToString(sum[:])+"  axe.min.js") {
		t.Fatal("testdata/axe/axe.min.js does not match testdata/axe/SHA256SUMS")
	}
	return string(src)
}

type axeResult struct {
	Violations []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target []any `json:"target"`
		} `json:"nodes"`
	} `json:"violations"`
}

// axeRun runs axe-core on the page shown.
func (b *browser) axeRun(t *testing.T, axe, page string) axeResult {
	t.Helper()
	get(t, b, "load axe", chromedp.Evaluate[bool](axe+";true"))
	return get(t, b, "axe on "+page, chromedp.Evaluate[axeResult](`axe.run(document, {resultTypes: ["violations"]})`, chromedp.EvalAwaitPromise))
}

// axeWorks checks that axe finds what it must: an image without a text
// alternative added to the page shown (which the next navigation drops).
func (b *browser) axeWorks(t *testing.T, axe string) {
	t.Helper()
	get(t, b, "add a bad image", chromedp.Evaluate[bool](`document.body.appendChild(document.createElement("img")); true`))
	for _, v := range b.axeRun(t, axe, "a page with a bad image").Violations {
		if v.ID == "image-alt" && v.Impact == "critical" {
			return
		}
	}
	t.Fatal("axe found no image-alt violation on a page with an image without alt: it does not run")
}

// accessible runs axe-core on the page shown and fails on any serious or
// critical finding.
func (b *browser) accessible(t *testing.T, axe, page string) {
	t.Helper()
	res := b.axeRun(t, axe, page)
	for _, v := range res.Violations {
		if v.Impact != "serious" && v.Impact != "critical" {
			t.Logf("%s: axe %s (%s): %s", page, v.ID, v.Impact, v.Help)
		}
		if v.Impact == "serious" || v.Impact == "critical" {
			var where []string
			for _, n := range v.Nodes {
				where = append(where, fmt.Sprint(n.Target...))
			}
			t.Errorf("%s: axe %s (%s): %s at %s (screenshot: %s)", page, v.ID, v.Impact, v.Help, strings.Join(where, ", "), b.screenshot(t))
		}
	}
}

// location is the path and query the browser shows.
func (b *browser) location(t *testing.T) *url.URL {
	t.Helper()
	u, err := url.Parse(get(t, b, "location", chromedp.Location()))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// consoleClient is a cookie-keeping HTTP client of the console, as a
// script (not a browser) would be.
func consoleClient(t testing.TB, st *Stack, token string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(st.AdminURL+"/console/sign-in", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in with a token: %d, want 303", res.StatusCode)
	}
	return c
}

func readAll(t testing.TB, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVendoredAxeMatchesItsSums keeps testdata/axe as it was fetched
// (testdata/axe/README.md).
func TestVendoredAxeMatchesItsSums(t *testing.T) {
	t.Parallel()
	sums, err := os.ReadFile("testdata/axe/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(sums)), "\n") {
		want, name, _ := strings.Cut(line, "  ")
		b, err := os.ReadFile(filepath.Join("testdata/axe", name))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
			t.Errorf("testdata/axe/%s does not match its SHA256SUMS line", name)
		}
	}
}
