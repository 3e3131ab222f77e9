package chartcheck

import (
	"maps"
	"slices"
	"testing"
)

// TestSecretChecksums checks the pod templates' checksum/secrets: the same
// values give the same checksums (a key the chart generates is not in them,
// so an upgrade with unchanged values restarts nothing), and a value written
// into a Secret changes the checksums of the services that read it alone.
func TestSecretChecksums(t *testing.T) {
	ch := loadChart(t)
	sums := func(vals map[string]any) map[string]string {
		t.Helper()
		out, err := render(ch, vals)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, d := range decode(t, out).deployments {
			got[d.Name] = d.Spec.Template.Annotations["checksum/secrets"]
		}
		return got
	}
	base := func() map[string]any { return valuesFile(t, "default-values.yaml") }
	first, second := sums(base()), sums(base())
	if !maps.Equal(first, second) {
		t.Fatalf("two renders of the same values give different checksums (every pod would restart at an upgrade):\n%v\n%v", first, second)
	}
	cases := []struct {
		name string
		set  func(v map[string]any)
		want []string
	}{
		{"mongodb.uri", func(v map[string]any) { v["mongodb"] = map[string]any{"uri": "mongodb://other:27017"} },
			[]string{"doclib-catalog", "doclib-media", "doclib-taxonomy", "doclib-webhook"}},
		{"s3 keys", func(v map[string]any) {
			v["s3"] = map[string]any{"existingSecret": "", "accessKey": "a", "secretKey": "b"}
		}, []string{"doclib-media"}},
		{"bo.tokens", func(v map[string]any) {
			v["bo"] = map[string]any{"tokens": []any{map[string]any{"name": "x", "role": "editor", "token": "another-token-0123456789abcdef-0123"}}}
		}, []string{"doclib-gateway"}},
		{"identity.key", func(v map[string]any) { v["identity"] = map[string]any{"key": "0123456789abcdef0123456789abcdef0123"} },
			[]string{"doclib-catalog", "doclib-gateway", "doclib-media", "doclib-taxonomy", "doclib-webhook"}},
		{"webhookSecretKey.key", func(v map[string]any) {
			v["webhookSecretKey"] = map[string]any{"key": "0123456789abcdef0123456789abcdef0123"}
		}, []string{"doclib-webhook"}},
	}
	for _, c := range cases {
		vals := base()
		c.set(vals)
		after := sums(vals)
		var changed []string
		for name, sum := range first {
			if after[name] != sum {
				changed = append(changed, name)
			}
		}
		slices.Sort(changed)
		if !slices.Equal(changed, c.want) {
			t.Errorf("%s changes the checksums of %v; want %v", c.name, changed, c.want)
		}
	}
}
