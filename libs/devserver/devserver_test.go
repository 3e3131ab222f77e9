package devserver_test

import (
	"testing"

	"github.com/doclib/libs/devserver"
)

func TestFreeAddrNeverRepeats(t *testing.T) {
	seen := map[string]bool{}
	for range 300 {
		addr, err := devserver.FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		if seen[addr] {
			t.Fatalf("FreeAddr returned %s twice", addr)
		}
		seen[addr] = true
	}
}
