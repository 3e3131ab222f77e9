package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/doclib/services/media/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

var lim = sandbox.Limits{Memory: 1 << 30, CPU: 5 * time.Second, Timeout: 20 * time.Second, Output: 1 << 20}

// TestToolEnvironment: a tool sees PATH and the locale, not the service's
// secrets.
func TestToolEnvironment(t *testing.T) {
	t.Setenv("S3_SECRET_KEY", "s3-secret")
	t.Setenv("MONGODB_URI", "mongodb://user:pass@db")
	t.Setenv("LANG", "C.UTF-8")
	out, err := sandbox.Run(context.Background(), lim, "env")
	if err != nil {
		t.Fatal(err)
	}
	env := string(out)
	if strings.Contains(env, "s3-secret") || strings.Contains(env, "S3_SECRET_KEY") || strings.Contains(env, "MONGODB_URI") {
		t.Errorf("the tool's environment has the service's secrets:\n%s", env)
	}
	if !strings.Contains(env, "PATH=") || !strings.Contains(env, "LANG=C.UTF-8") {
		t.Errorf("the tool's environment lacks PATH or LANG:\n%s", env)
	}
}

// TestToolNoNewPrivs: the tool runs with no_new_privs set.
func TestToolNoNewPrivs(t *testing.T) {
	out, err := sandbox.Run(context.Background(), lim, "grep", "NoNewPrivs", "/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "1") {
		t.Errorf("the tool's status says %q, want NoNewPrivs 1", out)
	}
}
