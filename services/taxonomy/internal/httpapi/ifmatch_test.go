package httpapi_test

import (
	"strings"
	"testing"

	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
	settingstore "github.com/doclib/services/taxonomy/internal/setting/mongostore"
)

// stale returns tags that must not match etag: another tag, etag with a
// suffix or without its last digit (compared whole, not as a prefix), and
// etag weak.
func stale(etag string) []string {
	inner := strings.Trim(etag, `"`)
	return []string{`"nope"`, `"` + inner + `ff"`, `"` + inner[:len(inner)-1] + `"`, "W/" + etag}
}

// A rename of a tag or category with If-Match is made only while the tag
// is the ETag of GET /bo/tags-categories (where both are read), checked in
// the write's transaction; any other tag is 412 and changes nothing.
func TestTaxonomyWritesHonourIfMatch(t *testing.T) {
	a := newAPI(t)
	a.must("POST", "/bo/tags-categories", `{"id":"c1","name":"One"}`, 201)
	a.must("POST", "/bo/tags", `{"id":"t1","name":"A","categoryId":"c1"}`, 201)
	list := a.must("GET", "/bo/tags-categories", "", 200)
	etag := list.header.Get("ETag")
	for _, w := range []struct{ path, body string }{
		{"/bo/tags/t1", `{"name":"B"}`}, {"/bo/tags-categories/c1", `{"name":"Two"}`},
	} {
		for _, tag := range stale(etag) {
			if r := a.do("PATCH", w.path, w.body, "If-Match", tag); r.status != 412 || !strings.Contains(r.body, "precondition_failed") {
				t.Errorf("PATCH %s If-Match %s: %d %s, want 412 precondition_failed", w.path, tag, r.status, r.body)
			}
		}
	}
	if r := a.must("GET", "/bo/tags-categories", "", 200); r.body != list.body {
		t.Fatalf("a refused write changed the taxonomy: %s, was %s", r.body, list.body)
	}
	if r := a.do("PATCH", "/bo/tags/t1", `{"name":"B"}`, "If-Match", etag); r.status != 200 {
		t.Fatalf("PATCH with the current ETag: %d %s, want 200", r.status, r.body)
	}
	if r := a.do("PATCH", "/bo/tags-categories/c1", `{"name":"Two"}`, "If-Match", etag); r.status != 412 {
		t.Errorf("PATCH with the ETag from before the last write: %d %s, want 412", r.status, r.body)
	}
	if r := a.do("PATCH", "/bo/tags-categories/c1", `{"name":"Two"}`, "If-Match", `"x", *`); r.status != 200 {
		t.Errorf("PATCH If-Match *: %d %s, want 200", r.status, r.body)
	}
	etag = a.must("GET", "/bo/tags-categories", "", 200).header.Get("ETag")
	if r := a.do("PATCH", "/bo/tags-categories/c1", `{"name":"Three"}`, "If-Match", `"other", `+etag); r.status != 200 {
		t.Errorf("PATCH If-Match naming the current ETag in a list: %d %s, want 200", r.status, r.body)
	}
}

// PUT /bo/config with If-Match is made only while the tag is the ETag of
// GET /bo/config, the default's included.
func TestConfigPutHonoursIfMatch(t *testing.T) {
	t.Parallel()
	db := testkit.Mongo(t)
	store := settingstore.New(db, outbox.New(db, testkit.Logger(t)))
	h := configReplica(store)
	alice := &identity.Caller{Name: "alice", Role: identity.Editor}
	put := func(email, ifMatch string) int {
		t.Helper()
		return configCall(t, h, "PUT", "/bo/config", `{"moderatorEmail":"`+email+`"}`, alice, "If-Match", ifMatch).Code
	}
	etag := configCall(t, h, "GET", "/bo/config", "", alice).Header().Get("ETag")
	for _, tag := range stale(etag) {
		if code := put("a@example.org", tag); code != 412 {
			t.Errorf("PUT If-Match %s on the default: %d, want 412", tag, code)
		}
	}
	if got := configCall(t, h, "GET", "/bo/config", "", alice); got.Header().Get("ETag") != etag {
		t.Fatalf("a refused PUT changed the settings: %s", got.Body)
	}
	if code := put("a@example.org", etag); code != 200 {
		t.Fatalf("PUT with the default's ETag: %d, want 200", code)
	}
	if code := put("b@example.org", etag); code != 412 {
		t.Errorf("PUT with the ETag from before the last PUT: %d, want 412", code)
	}
	etag = configCall(t, h, "GET", "/bo/config", "", alice).Header().Get("ETag")
	if code := put("b@example.org", etag); code != 200 {
		t.Errorf("PUT with the current ETag: %d, want 200", code)
	}
}
