package testkit

import (
	"os"
	"os/exec"
	"testing"
)

// Chromium finds Debian's Chromium (make test installs it: DEBS_TEST in
// the Makefile) for the tests that drive a browser. Without it the test is
// skipped, unless DOCLIB_REQUIRE_BROWSER is set (make test sets it), so
// `make test` on a clean clone always runs them.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("DOCLIB_REQUIRE_BROWSER") != "" {
		t.Fatal("Chromium is not installed: apt-get install chromium (as root), or run make test as root")
	}
	t.Skip("Chromium is not installed (apt-get install chromium); DOCLIB_REQUIRE_BROWSER makes this a failure")
	return ""
}
