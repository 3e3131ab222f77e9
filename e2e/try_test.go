package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTryScript runs scripts/try.sh, the tour the README points to, top to
// bottom against a fresh stack: every call must answer the status the
// script expects.
func TestTryScript(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	cmd := exec.Command("bash", "../scripts/try.sh")
	cmd.Env = append(os.Environ(), "PUBLIC_URL="+st.URL, "ADMIN_URL="+st.AdminURL,
		"BO_TOKEN="+Token, "BO_VIEWER_TOKEN="+ViewerToken)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/try.sh: %v\n%s", err, out)
	}
	if !strings.HasSuffix(strings.TrimSpace(string(out)), "done: every call answered as expected") {
		t.Errorf("scripts/try.sh ended early:\n%s", out)
	}
}
