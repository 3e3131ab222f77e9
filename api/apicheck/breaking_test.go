package apicheck

import (
	"os"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oasdiff/oasdiff/checker"
	"github.com/oasdiff/oasdiff/diff"
	oasload "github.com/oasdiff/oasdiff/load"
)

// TestNoBreakingChangeAgainstThePublishedContract is `oasdiff breaking`
// between the published contract (api/baseline/openapi.yaml) and the
// document: any change oasdiff rates an error (a route, parameter value,
// response property or status an installed app relies on, removed or
// made stricter) fails. allOf branches are merged first, as the document
// composes its schemas with them. Warnings (changes that break only some
// clients) are logged. README, "The API reference", says how to publish a
// change deliberately.
func TestNoBreakingChangeAgainstThePublishedContract(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	loader.IncludeOrigin = true
	specs := make([]*oasload.SpecInfo, 2)
	for i, path := range []string{baselinePath, documentPath} {
		s, err := oasload.NewSpecInfo(loader, oasload.NewSource(path), oasload.WithFlattenAllOf())
		if err != nil {
			t.Fatalf("load %s: %v", path, err)
		}
		specs[i] = s
	}
	d, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), specs[0], specs[1])
	if err != nil {
		t.Fatalf("diff: %v", err)
	}
	changes := checker.CheckBackwardCompatibilityUntilLevel(checker.NewConfig(checker.GetAllChecks()), d, sources, checker.WARN)
	l := checker.NewDefaultLocalizer()
	for _, c := range changes {
		msg := c.SingleLineError(l, checker.ColorNever)
		if c.GetLevel() >= checker.ERR {
			t.Errorf("breaks installed apps: %s", msg)
		} else {
			t.Logf("may break some clients: %s", msg)
		}
	}
}

// TestTheBreakingCheckSeesABreak shows the check above catches a change
// that breaks apps: the detail route renamed.
func TestTheBreakingCheckSeesABreak(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(baselinePath)
	if err != nil {
		t.Fatal(err)
	}
	renamed := strings.Replace(string(raw), "\n  /public/documents/{id}/detail:\n", "\n  /public/documents/{id}/details:\n", 1)
	if renamed == string(raw) {
		t.Fatal("the baseline has no /public/documents/{id}/detail to rename")
	}
	base, err := oasload.NewSpecInfoFromData(openapi3.NewLoader(), raw, "baseline")
	if err != nil {
		t.Fatal(err)
	}
	rev, err := oasload.NewSpecInfoFromData(openapi3.NewLoader(), []byte(renamed), "renamed")
	if err != nil {
		t.Fatal(err)
	}
	d, sources, err := diff.GetWithOperationsSourcesMap(diff.NewConfig(), base, rev)
	if err != nil {
		t.Fatal(err)
	}
	changes := checker.CheckBackwardCompatibility(checker.NewConfig(checker.GetAllChecks()), d, sources)
	if !changes.HasLevelOrHigher(checker.ERR) {
		t.Errorf("renaming the detail route is not reported as breaking: %d changes", len(changes))
	}
}
