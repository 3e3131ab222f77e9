package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestConsoleScreenshots takes the console's screenshots for the
// documentation from a running `make dev` with real-looking content:
// DOCLIB_CONSOLE_SCREENSHOTS names the folder to write them to (skipped
// without it), DOCLIB_CONSOLE_PENDING a document with pending changes.
func TestConsoleScreenshots(t *testing.T) {
	dir := os.Getenv("DOCLIB_CONSOLE_SCREENSHOTS")
	if dir == "" {
		t.Skip("DOCLIB_CONSOLE_SCREENSHOTS is unset")
	}
	admin := "http://127.0.0.1:8090/console"
	b := newBrowser(t)
	b.run(t, "sign in", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), "dev-token"), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("filters")))
	shot := func(name, page string, w, h int64) {
		b.run(t, name, chromedp.EmulateViewport(w, h), chromedp.Navigate(admin+page), chromedp.WaitVisible(chromedp.ID("main")))
		png := get(t, b, name, chromedp.CaptureScreenshot())
		if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	shot("console-documents-1440", "/", 1440, 900)
	shot("console-documents-360", "/", 360, 800)
	if id := os.Getenv("DOCLIB_CONSOLE_PENDING"); id != "" {
		shot("console-pending-changes", "/documents/"+id, 1440, 1100)
	}
}
