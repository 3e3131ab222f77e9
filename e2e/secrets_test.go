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
		"CATALOG_URL=http://svc:hunter9@" + down, "WEBHOOK_URL=http://svc:hunter14@" + down,
		"BO_API_TOKENS=ops:editor:hunter10-token,ro:viewer:hunter11-token", "OIDC_ISSUER_URL=http://oidc:hunter12@" + down, "OIDC_AUDIENCE=doclib",
		"IDENTITY_SIGNING_KEY=hunter13-0123456789abcdef0123456789abcdef", "MODERATOR_EMAIL=moderation@example.org",
		"LOG_LEVEL=debug",
	}
	for _, s := range []string{"taxonomy", "catalog", "media", "gateway"} {
		t.Run(s, func(t *testing.T) {
			addr, err := devserver.FreeAddr()
			testkit.Must(t, err, "free port")
			ctx, cancel := context.WithTimeout(context.Background(), 12*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, s))
			admin, err := devserver.FreeAddr()
			testkit.Must(t, err, "free port")
			listen := []string{"HTTP_ADDR=" + addr}
			if s == "gateway" {
				listen = []string{"PUBLIC_ADDR=" + addr, "ADMIN_ADDR=" + admin}
			}
			cmd.Env = append(append([]string(nil), secretEnv...), listen...)
			out, _ := cmd.CombinedOutput() // runs until it gives up on its dependencies, or 12 s
			// It must get as far as its line of settings, or this checks
			// nothing (a required variable added later would stop it before).
			if !strings.Contains(string(out), `"msg":"starting"`) && !strings.Contains(string(out), `"msg":"configuration"`) {
				t.Fatalf("%s stopped before logging its settings:\n%s", s, out)
			}
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, "hunter") {
					t.Errorf("%s logged a secret: %s", s, line)
				}
			}
		})
	}
}
