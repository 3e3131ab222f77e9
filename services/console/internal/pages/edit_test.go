package pages

import (
	"net/http"
	"strings"
	"testing"

	"github.com/doclib/services/console/internal/boclient"
)

// A create sent again with the key of a save whose answer was lost, but
// with a changed form, is refused 422 idempotency_key_reused: the person
// must learn that the first save may have made the document, not "use a
// new key".
func TestAKeyReusedAfterALostAnswerIsExplained(t *testing.T) {
	e := explain(&boclient.APIError{Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused", Detail: "use a new key"})
	if !strings.Contains(e.Detail, "may have gone through") || strings.Contains(e.Detail, "new key") {
		t.Fatalf("detail %q: want the earlier save named, not the protocol", e.Detail)
	}
	if retriable(e) {
		t.Fatal("a reused key is an answer the API keeps for no one: the next save needs a new key")
	}
}
