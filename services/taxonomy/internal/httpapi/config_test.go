package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/taxonomy/internal/httpapi"
	"github.com/doclib/services/taxonomy/internal/setting"
	settingstore "github.com/doclib/services/taxonomy/internal/setting/mongostore"
)

var configKey = []byte("taxonomy-test-identity-key-0123456789")

// configReplica is one taxonomy replica serving the settings, with the
// gateway's proof checked as cmd/taxonomy wires it.
func configReplica(store *settingstore.Store) http.Handler {
	e := httpx.NewEngine("taxonomy", slog.New(slog.DiscardHandler))
	e.Use(proof.Middleware(proof.NewVerifier(configKey)))
	httpapi.NewSettings(setting.NewService(store, "moderation@example.org"), store).Register(e)
	return e
}

func configCall(t *testing.T, h http.Handler, method, path, body string, caller *identity.Caller, headers ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if caller != nil {
		proof.NewSigner(configKey).SignRequest(req, *caller)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestConfig(t *testing.T) {
	t.Parallel()
	db := testkit.Mongo(t)
	store := settingstore.New(db, outbox.New(db, testkit.Logger(t)))
	a, b := configReplica(store), configReplica(store)
	alice := &identity.Caller{Name: "alice", Role: identity.Editor}
	carol := &identity.Caller{Name: "carol", Role: identity.Viewer}

	pub := configCall(t, a, "GET", "/public/config", "", nil)
	if pub.Code != 200 || pub.Body.String() != `{"moderatorEmail":"moderation@example.org"}` {
		t.Fatalf("before any PUT: %d %s, want the default", pub.Code, pub.Body)
	}
	if pub.Header().Get("Cache-Control") != "no-cache" || pub.Header().Get("ETag") == "" {
		t.Errorf("public headers %v, want no-cache and an ETag", pub.Header())
	}
	if r := configCall(t, a, "GET", "/public/config", "", nil, "If-None-Match", pub.Header().Get("ETag")); r.Code != 304 {
		t.Errorf("If-None-Match: %d, want 304", r.Code)
	}
	bo := configCall(t, a, "GET", "/bo/config", "", carol)
	if bo.Code != 200 || bo.Body.String() != `{"moderatorEmail":"moderation@example.org"}` || bo.Header().Get("Cache-Control") != "private, no-cache" {
		t.Fatalf("GET /bo/config: %d %s %v", bo.Code, bo.Body, bo.Header())
	}

	bad := []struct {
		name, body string
		status     int
	}{
		{"not an address", `{"moderatorEmail":"not-an-email"}`, 422},
		{"a display name", `{"moderatorEmail":"Mod <mod@example.org>"}`, 422},
		{"empty", `{"moderatorEmail":""}`, 422},
		{"missing", `{}`, 422},
		{"no domain", `{"moderatorEmail":"mod@localhost"}`, 422},
		// Issue 21 item 10: a domain that is not a host name.
		{"a query in the domain", `{"moderatorEmail":"m@example.org?cc=attacker%40evil.org&body=hi"}`, 422},
		{"braces in the domain", `{"moderatorEmail":"m@ex{a}mple.org"}`, 422},
		{"hyphen labels", `{"moderatorEmail":"m@-.-"}`, 422},
		{"an IP address", `{"moderatorEmail":"m@1.2.3.4"}`, 422},
		{"a 64-character label", `{"moderatorEmail":"m@` + strings.Repeat("a", 64) + `.org"}`, 422},
		{"wrong type", `{"moderatorEmail":42}`, 400},
		{"not JSON", `moderatorEmail=x`, 400},
	}
	for _, tt := range bad {
		r := configCall(t, a, "PUT", "/bo/config", tt.body, alice)
		if r.Code != tt.status || r.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %s, want a %d problem", tt.name, r.Code, r.Body, tt.status)
		}
		if tt.status == 422 && !strings.Contains(r.Body.String(), `"field":"moderatorEmail"`) {
			t.Errorf("%s: %s does not name moderatorEmail", tt.name, r.Body)
		}
	}
	if r := configCall(t, a, "PUT", "/bo/config", `{"moderatorEmail":"x@example.org"}`, carol); r.Code != 403 {
		t.Errorf("a viewer's PUT: %d, want 403", r.Code)
	}
	if r := configCall(t, a, "PUT", "/bo/config", `{"moderatorEmail":"x@example.org"}`, nil); r.Code != 401 {
		t.Errorf("an unsigned PUT: %d, want 401", r.Code)
	}
	if r := configCall(t, a, "GET", "/public/config", "", nil); r.Body.String() != pub.Body.String() {
		t.Fatalf("refused PUTs changed the settings: %s", r.Body)
	}

	put := configCall(t, a, "PUT", "/bo/config", `{"moderatorEmail":" mod@example.org "}`, alice)
	var got struct{ ModeratorEmail, UpdatedAt, UpdatedBy string }
	if err := json.Unmarshal(put.Body.Bytes(), &got); err != nil || put.Code != 200 {
		t.Fatalf("PUT: %d %s", put.Code, put.Body)
	}
	if got.ModeratorEmail != "mod@example.org" || got.UpdatedBy != "alice" {
		t.Errorf("PUT answered %+v, want mod@example.org by alice", got)
	}
	if _, err := time.Parse(httpx.TimeFormat, got.UpdatedAt); err != nil {
		t.Errorf("updatedAt %q: %v", got.UpdatedAt, err)
	}
	if r := configCall(t, a, "GET", "/public/config", "", nil); r.Body.String() != `{"moderatorEmail":"mod@example.org"}` {
		t.Errorf("the same replica after the PUT: %s", r.Body)
	}
	if r := configCall(t, a, "GET", "/bo/config", "", alice); r.Body.String() != put.Body.String() {
		t.Errorf("GET /bo/config after the PUT: %s, want %s", r.Body, put.Body)
	}
	// Another replica sees it within its lag.
	deadline := time.Now().Add(5 * time.Second)
	for configCall(t, b, "GET", "/public/config", "", nil).Body.String() != `{"moderatorEmail":"mod@example.org"}` {
		if time.Now().After(deadline) {
			t.Fatal("another replica still serves the old address after 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestImportConfigCreatesOrCompares: the settings an archive holds are
// stored where none were set; the same again is 200 and changes nothing;
// others are 409 import_conflict and the installation's stay.
func TestImportConfigCreatesOrCompares(t *testing.T) {
	t.Parallel()
	db := testkit.Mongo(t)
	h := configReplica(settingstore.New(db, outbox.New(db, testkit.Logger(t))))
	alice := &identity.Caller{Name: "alice", Role: identity.Editor}
	set := `{"moderatorEmail":"mod@example.org","updatedAt":"2026-11-20T09:00:03.118Z","updatedBy":"bob"}`
	for i := range 2 {
		if r := configCall(t, h, "PUT", "/bo/import/config", set, alice); r.Code != 200 {
			t.Fatalf("import %d: %d %s, want 200", i+1, r.Code, r.Body)
		}
	}
	other := `{"moderatorEmail":"other@example.org","updatedAt":"2026-11-21T09:00:03.118Z","updatedBy":"eve"}`
	r := configCall(t, h, "PUT", "/bo/import/config", other, alice)
	if r.Code != 409 || !strings.Contains(r.Body.String(), `"import_conflict"`) {
		t.Fatalf("other settings: %d %s, want 409 import_conflict", r.Code, r.Body)
	}
	if pub := configCall(t, h, "GET", "/public/config", "", nil); pub.Body.String() != `{"moderatorEmail":"mod@example.org"}` {
		t.Errorf("after a refused import: %s, want the imported settings kept", pub.Body)
	}
}
