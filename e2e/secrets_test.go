package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/testkit"
)

// TestSecretsNeverLogged (issue 16 item 14) starts every service with
// credentials in every URI and in every secret variable, against servers
// that are not there, and reads everything it writes: its start-up line of
// settings and the errors that follow. No secret may appear.
func TestSecretsNeverLogged(t *testing.T) {
	dir := buildServices(t)
	down, err := devserver.FreeAddr() // nothing listens there
	testkit.Must(t, err, "free port")
	secretEnv := []string{
		"MONGODB_URI=mongodb://admin:hunter2@" + down + "/?authSource=admin&tlsCertificateKeyFilePassword=hunter3",
		"NATS_URL=nats://natsuser:hunter4@" + down,
		"S3_ENDPOINT=" + down, "S3_ACCESS_KEY=hunter5", "S3_SECRET_KEY=hunter6",
		"TAXONOMY_URL=http://svc:hunter7@" + down, "MEDIA_URL=http://svc:hunter8@" + down,
		"CATALOG_URL=http://svc:hunter9@" + down,
		"BO_API_TOKENS=ops:editor:hunter10-token,ro:viewer:hunter11-token", "OIDC_ISSUER_URL=http://oidc:hunter12@" + down, "OIDC_AUDIENCE=doclib",
		"LOG_LEVEL=debug",
	}
	for _, s := range []string{"taxonomy", "catalog", "media", "gateway"} {
		t.Run(s, func(t *testing.T) {
			addr, err := devserver.FreeAddr()
			testkit.Must(t, err, "free port")
			ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, s))
			cmd.Env = append(secretEnv, "HTTP_ADDR="+addr, "PUBLIC_ADDR="+addr)
			out, _ := cmd.CombinedOutput() // runs until it gives up on its dependencies, or 12 s
			if len(out) == 0 || !strings.Contains(string(out), s) {
				t.Fatalf("%s wrote nothing to check: %q", s, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "hunter") {
					t.Errorf("%s logged a secret: %s", s, line)
				}
			}
		})
	}
}
