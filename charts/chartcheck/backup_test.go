package chartcheck

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestBackupCronJob: off by default; on, one CronJob running doclib export
// -s3 against the gateway's admin port with the media S3 settings and the
// retention asked, restricted like the services, never two runs at once;
// its pod may reach the gateway's admin port (and the gateway lets it),
// S3 and DNS only. Without the token's Secret the render is refused.
func TestBackupCronJob(t *testing.T) {
	t.Parallel()
	ch := loadChart(t)
	out, err := render(ch, valuesFile(t, "default-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantCount(t, "CronJobs by default", len(decode(t, out).cronjobs), 0)

	vals := valuesFile(t, "backup-values.yaml")
	out, err = render(ch, vals)
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, out)
	wantCount(t, "NetworkPolicies (the services' and the backup's)", len(m.netpols), 6)
	wantCount(t, "CronJobs", len(m.cronjobs), 1)
	cj := m.cronjobs[0]
	if cj.Spec.ConcurrencyPolicy != "Forbid" {
		t.Errorf("concurrencyPolicy %q, want Forbid (two exports at once would race on retention)", cj.Spec.ConcurrencyPolicy)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	if len(pod.Containers) != 1 || !restrictedPod(pod.SecurityContext) || !restricted(pod.Containers[0].SecurityContext) {
		t.Fatalf("the backup pod is not restricted like the services: %+v", pod)
	}
	c := pod.Containers[0]
	if !slices.Equal(c.Args, []string{"export", "-s3", "-zstd"}) {
		t.Errorf("args %v", c.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for name, want := range map[string]string{"DOCLIB_URL": "http://doclib-gateway:8090", "DOCLIB_BACKUP_KEEP": "14",
		"DOCLIB_BACKUP_BUCKET": "doclib-backups", "S3_ENDPOINT": "minio:9000"} {
		if env[name].Value != want {
			t.Errorf("%s = %q, want %q", name, env[name].Value, want)
		}
	}
	for name, secret := range map[string]string{"DOCLIB_TOKEN": "doclib-backup", "S3_ACCESS_KEY": "doclib-s3", "S3_SECRET_KEY": "doclib-s3"} {
		if ref := env[name].ValueFrom; ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != secret {
			t.Errorf("%s is not read from the Secret %s", name, secret)
		}
	}
	np := netpol(t, m, "backup")
	if got := egressPorts(np); !strings.Contains(got, "8090") || !strings.Contains(got, "9000") || !strings.Contains(got, "53") {
		t.Errorf("backup egress %s, want the gateway's admin port, S3's and DNS", got)
	}
	if src := sources(netpol(t, m, "gateway")); !strings.Contains(strings.Join(src["admin"], " "), "backup") {
		t.Errorf("the gateway's admin port does not admit the backup pod: %v", src)
	}

	delete(vals["backup"].(map[string]any), "tokenSecret")
	if _, err := render(ch, vals); err == nil || !strings.Contains(err.Error(), "backup.tokenSecret") {
		t.Errorf("backup without a token Secret: error %v, want the chart's refusal", err)
	}
}
