package e2e

import (
	"context"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// unsafeMarkdown is unsaved text that would run script if a preview
// showed it as typed.
const unsafeMarkdown = "# Aperçu\n\n[clic](javascript:alert(5))\n\n<script>alert(6)</script>\n"

// livePreview types unsafe Markdown in a new document and waits for the
// script's preview: rendered, sanitised, in a frame that runs no script.
func livePreview(t *testing.T, b *browser, axe, admin string) {
	b.run(t, "type Markdown", chromedp.Navigate(admin+"/documents/new?type=MARKDOWN"), chromedp.WaitVisible(chromedp.ID("content")),
		runJS(`window.violations = []; document.addEventListener("securitypolicyviolation",
			e => violations.push(e.violatedDirective + " " + e.blockedURI))`),
		chromedp.SendKeys(chromedp.ID("content"), unsafeMarkdown), waitFor(`document.getElementById("preview").srcdoc.includes("<h1>Aperçu</h1>")`))
	if v := get(t, b, "violations", chromedp.Evaluate[[]string](`violations`)); len(v) != 0 {
		t.Errorf("the page's CSP blocked %v", v)
	}
	doc := get(t, b, "preview", chromedp.Evaluate[string](`document.getElementById("preview").srcdoc`))
	wantSafePreview(t, doc)
	if sb := get(t, b, "sandbox", chromedp.Evaluate[string](`document.getElementById("preview").getAttribute("sandbox")`)); sb != "" {
		t.Errorf("the preview frame's sandbox is %q, want empty (no script, no same origin)", sb)
	}
	b.accessible(t, axe, "edit MARKDOWN with a preview")
}

func wantSafePreview(t *testing.T, doc string) {
	t.Helper()
	if !strings.Contains(doc, "<h1>Aperçu</h1>") || !strings.Contains(doc, "clic") {
		t.Errorf("the preview %q does not show the text rendered", doc)
	}
	for _, bad := range []string{"javascript:", "<script", "href="} {
		if strings.Contains(doc, bad) {
			t.Errorf("the preview %q holds %q", doc, bad)
		}
	}
}

var srcdocAttr = regexp.MustCompile(`srcdoc="([^"]*)"`)

// previewWithoutScript presses Preview as a browser without script does:
// the edit page comes back with the typed text and the preview, and
// nothing is stored.
func previewWithoutScript(t *testing.T, st *Stack, run string) {
	c := consoleClient(t, st, Token)
	title := "Aperçu " + run
	form := url.Values{"type": {"MARKDOWN"}, "title": {title}, "content": {unsafeMarkdown}, "preview": {"1"}, "key": {"k" + run}}
	res := must(c.PostForm(st.AdminURL+"/console/documents/new", form))
	body := readAll(t, res)
	if res.StatusCode != 200 {
		t.Fatalf("Preview: %d, want 200", res.StatusCode)
	}
	if !strings.Contains(body, html.EscapeString(title)) || !strings.Contains(body, ">"+html.EscapeString(unsafeMarkdown)+"</textarea>") {
		t.Errorf("the previewed page lost what was typed:\n%s", body)
	}
	m := srcdocAttr.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no preview frame on the previewed page:\n%s", body)
	}
	wantSafePreview(t, html.UnescapeString(m[1]))
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	var all []struct{ Title string }
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &all)
	for _, d := range all {
		if d.Title == title {
			t.Errorf("a preview stored the document %q", title)
		}
	}
}

// runJS runs a script on the page.
func runJS(script string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](script+"; true")(ctx, tg)
		return err
	})
}
