package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/testkit"
)

// TestImportTakesBodiesOverTheJSONLimit: a document of 1 MiB content and
// 1 MiB draft, JSON-escaped, is over the 2 MiB JSON limit; its import must
// be read (the import routes take up to MaxImportJSONBody).
func TestImportTakesBodiesOverTheJSONLimit(t *testing.T) {
	r := newReplica(t, testkit.Mongo(t), newWorld())
	pad := func(n int) string {
		return `{"id":"big","padding":"` + strings.Repeat("x", n) + `"}`
	}
	for _, path := range []string{"/bo/import/documents/big", "/bo/import/documents/big/revisions/1"} {
		if a := r.do("PUT", path, pad(3<<20)); a.code == http.StatusRequestEntityTooLarge {
			t.Errorf("PUT %s of 3 MiB: 413, want it read", path)
		}
		if a := r.do("PUT", path, pad(httpx.MaxImportJSONBody)); a.code != http.StatusRequestEntityTooLarge {
			t.Errorf("PUT %s over %d bytes: %d, want 413", path, httpx.MaxImportJSONBody, a.code)
		}
	}
}
