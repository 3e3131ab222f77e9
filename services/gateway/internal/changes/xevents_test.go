package changes_test

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/doclib/libs/events"
)

// TestTheReferenceListsEveryEvent: api/openapi.yaml's x-events names every
// event type of libs/events once, with its public name, and no other.
func TestTheReferenceListsEveryEvent(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XEvents struct {
			Events []struct{ Subject, Name string } `yaml:"events"`
		} `yaml:"x-events"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	listed := map[string]string{}
	for _, e := range doc.XEvents.Events {
		if _, twice := listed[e.Subject]; twice {
			t.Errorf("x-events lists %s twice", e.Subject)
		}
		listed[e.Subject] = e.Name
	}
	for _, ty := range events.Types() {
		if name, ok := listed[ty.Subject]; !ok || name != ty.Name {
			t.Errorf("x-events: %s named %q, want it listed as %q", ty.Subject, name, ty.Name)
		}
		delete(listed, ty.Subject)
	}
	for s := range listed {
		t.Errorf("x-events lists %s, which libs/events does not define", s)
	}
}
