package e2e

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestTryScript runs scripts/try.sh, README's "Trying it", top to bottom
// against a fresh stack: every call must answer the status the script
// expects. README shows the script as it is.
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

// TestREADMEShowsTheTryScript keeps README's copy of scripts/try.sh true.
func TestREADMEShowsTheTryScript(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile("../scripts/try.sh")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "```sh\n"+string(script)+"```\n") {
		t.Error("README.md does not show scripts/try.sh as it is (a ```sh block holding the whole file): copy it again")
	}
}
