package startup

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/doclib/libs/config"
)

func TestBeginAndStopInReverseOrder(t *testing.T) {
	p, err := Begin(context.Background(), "test", config.FromEnviron(), "error")
	if err != nil {
		t.Fatal(err)
	}
	if p.Log == nil {
		t.Fatal("no logger")
	}
	var order []string
	p.OnStop("first", func(context.Context) error { order = append(order, "first"); return nil })
	p.OnStop("second", func(context.Context) error { order = append(order, "second"); return errors.New("logged, not fatal") })
	p.Stop()
	if strings.Join(order, ",") != "second,first" {
		t.Fatalf("stopped %v, want the last registered first", order)
	}
}

// A service without a database (the gateway, the console) links this
// package: it must not bring the MongoDB driver with it (it did, 44
// packages, when it opened every service's client).
func TestLinksNoDatabaseDriver(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "go.mongodb.org/") || pkg == "github.com/doclib/libs/mongox" {
			t.Errorf("package startup depends on %s", pkg)
		}
	}
}
