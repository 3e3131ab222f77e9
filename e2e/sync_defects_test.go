package e2e

import (
	"strings"
	"testing"
)

// TestAnUnparsableSyncQueryIs400 (issue 21, item 12): `?cursor=%zz` and
// `?cursor=<valid>;x=1` answered 200 with every document (Go's query
// parsing drops the pair, so the cursor was taken as absent), at the
// catalog and through the gateway; they are 400 problem+json.
func TestAnUnparsableSyncQueryIs400(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "T", "url": "https://x.org"}, 201)
	first, r := st.sync("")
	if r.Status != 200 || first.Cursor == "" {
		t.Fatalf("first sync: %d %s", r.Status, r.Body)
	}
	for _, q := range []string{"cursor=%zz", "cursor=" + first.Cursor + ";x=1", "x=%zz&cursor=" + first.Cursor} {
		for name, base := range map[string]string{"gateway": st.URL, "catalog": st.ServiceURL("catalog")} {
			r := st.ReqAt(base, "GET", "/public/sync?"+q, nil)
			if r.Status != 400 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/problem+json") || r.Problem(t).Code != "bad_request" {
				t.Errorf("%s, ?%s: %d %s; want 400 bad_request", name, q, r.Status, r.Body)
			}
		}
	}
}

// TestASyncPageCarriesTheCategoriesOfItsTags (issue 21, item 1): create a
// category and a tag, create a document with that tag, sync from the
// previous cursor at once: the page holds the document and the categories
// that name the tag.
func TestASyncPageCarriesTheCategoriesOfItsTags(t *testing.T) {
	st := NewStack(t, nil)
	first, r := st.sync("")
	if r.Status != 200 {
		t.Fatalf("first sync: %d %s", r.Status, r.Body)
	}
	st.Must("POST", "/bo/tags-categories", `{"id":"fresh-c","name":"Fresh"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"fresh","name":"Fresh","categoryId":"fresh-c"}`, 201)
	var d docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "T", "url": "https://x.org", "tagsIds": []string{"fresh"}}, 201).JSON(t, &d)
	page, r := st.sync(first.Cursor)
	if r.Status != 200 || len(page.Documents) != 1 || !strings.Contains(string(r.Body), `"fresh-c"`) {
		t.Errorf("the page after the create: %d %s; want the document and its tag's category", r.Status, r.Body)
	}
}
