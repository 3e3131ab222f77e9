package main

import (
	"os/exec"
	"strings"
	"testing"
)

// goListDeps returns the packages pkg links, itself included.
func goListDeps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	return deps
}

// The gateway has no database: it must not link the MongoDB driver's
// client (it linked 44 more packages of it when libs/startup opened every
// service's client). Gin itself imports the driver's BSON codec for its
// BSON binding, which no build tag removes: those packages, and only
// those, may stay.
func TestGatewayLinksNoDatabaseDriver(t *testing.T) {
	const driver = "go.mongodb.org/mongo-driver/"
	codec := goListDeps(t, "go.mongodb.org/mongo-driver/v2/bson")
	for p := range goListDeps(t, ".") {
		if p == "github.com/doclib/libs/mongox" || strings.HasPrefix(p, driver) && !codec[p] {
			t.Errorf("the gateway links %s", p)
		}
	}
}
