package e2e

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

type syncPage struct {
	Cursor    string `json:"cursor"`
	HasMore   bool   `json:"hasMore"`
	Documents []struct {
		ID        string   `json:"id"`
		Title     string   `json:"title"`
		TagsIDs   []string `json:"tagsIds"`
		UpdatedAt string   `json:"updatedAt"`
	} `json:"documents"`
	Removed       []string `json:"removedDocumentIds"`
	TagCategories []struct {
		ID string `json:"id"`
	} `json:"tagCategories"`
}

func (st *Stack) sync(cursor string) (syncPage, Response) {
	st.t.Helper()
	path := "/public/sync"
	if cursor != "" {
		path += "?cursor=" + url.QueryEscape(cursor)
	}
	r := st.Req("GET", path, nil)
	var p syncPage
	if r.Status == 200 {
		r.JSON(st.t, &p)
	}
	return p, r
}

func (p syncPage) ids() []string {
	var ids []string
	for _, d := range p.Documents {
		ids = append(ids, d.ID+"="+strings.Join(d.TagsIDs, "+"))
	}
	slices.Sort(ids)
	return ids
}

// TestSyncThroughTheGateway drives the delta sync of CONTRACT.md §8 as an
// app would: the first sync, nothing new, then a change, a deletion, a
// tag deleted (the document it leaves counts as changed) and a restore,
// and the cursors it refuses.
func TestSyncThroughTheGateway(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"C"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"a","name":"A","categoryId":"c"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"b","name":"B","categoryId":"c"}`, 201)
	doc := func(title string, tags ...string) string {
		var d docJSON
		st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": title, "url": "https://x.org", "tagsIds": tags}, 201).JSON(t, &d)
		return d.ID
	}
	d1, d2, d3 := doc("one", "a"), doc("two", "a", "b"), doc("three", "b")

	first, r := st.sync("")
	if r.Status != 200 || len(first.Documents) != 3 || len(first.Removed) != 0 || len(first.TagCategories) != 1 || first.HasMore ||
		first.Documents[0].UpdatedAt == "" || first.Cursor == "" {
		t.Fatalf("first sync: %d %s", r.Status, r.Body)
	}
	if etag := r.Header.Get("ETag"); etag == "" || st.Req("GET", "/public/sync", nil, "If-None-Match", etag).Status != 304 {
		t.Errorf("the first sync's ETag %q does not revalidate", etag)
	}
	idle, r := st.sync(first.Cursor)
	if r.Status != 200 || len(idle.Documents)+len(idle.Removed) != 0 || idle.TagCategories != nil || strings.Contains(string(r.Body), "tagCategories") {
		t.Errorf("a sync with nothing new: %d %s", r.Status, r.Body)
	}

	st.Must("PATCH", "/bo/documents/"+d1, map[string]any{"type": "LINK", "title": "one again", "url": "https://x.org", "tagsIds": []string{"a"}}, 200)
	st.Must("DELETE", "/bo/documents/"+d2, nil, 204)
	st.Must("DELETE", "/bo/tags/b", nil, 204)
	var changes syncPage
	Eventually(t, 10*time.Second, "the tag's deletion reaches the sync, documents and categories", func() bool {
		changes, _ = st.sync(idle.Cursor)
		return slices.Contains(changes.ids(), d3+"=") && changes.TagCategories != nil
	})
	if got, want := strings.Join(changes.ids(), " "), strings.Join([]string{d1 + "=a", d3 + "="}, " "); !sameSet(got, want) ||
		strings.Join(changes.Removed, ",") != d2 || len(changes.TagCategories) != 1 {
		t.Errorf("changes: documents %v, removed %v, categories %v; want %s, %s and the categories", changes.ids(), changes.Removed, changes.TagCategories, want, d2)
	}
	st.Must("POST", "/bo/documents/"+d2+"/restore", nil, 200)
	back, _ := st.sync(changes.Cursor)
	if strings.Join(back.ids(), ",") != d2+"=a" || len(back.Removed) != 0 || back.TagCategories != nil {
		t.Errorf("after the restore: %v removed %v categories %v", back.ids(), back.Removed, back.TagCategories)
	}

	for name, c := range map[string]string{
		"not base64": "!!!", "empty": "", "nonsense": "AQID", "long": strings.Repeat("A", 300),
		"from the future": "AeCnEgAAAAAAAAAAAA", // seq 300000
	} {
		path := "/public/sync?cursor=" + url.QueryEscape(c)
		if r := st.Req("GET", path, nil); r.Status != 400 || r.Problem(t).Code != "bad_request" {
			t.Errorf("%s cursor: %d %s", name, r.Status, r.Body)
		}
	}
}

// TestSyncFromTheGatewaysMemory: the gateway keeps sync pages, one per
// cursor, so apps that are up to date (all asking the current cursor) are
// answered from its memory; a write through the gateway shows in the next
// sync at once, and one it did not see (through another gateway replica)
// comes once the kept page is revalidated, never skipped: the page kept is
// the catalog's, its cursor included.
func TestSyncFromTheGatewaysMemory(t *testing.T) {
	st := NewStack(t, map[string][]string{"gateway": {"PUBLIC_CACHE_TTL=2s"}})
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"C"}`, 201)
	var d1 docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "one", "url": "https://x.org"}, 201).JSON(t, &d1)
	first, _ := st.sync("")
	idle, r := st.sync(first.Cursor)
	if r.Status != 200 || len(idle.Documents)+len(idle.Removed) != 0 {
		t.Fatalf("a sync with nothing new: %d %s", r.Status, r.Body)
	}
	asked := catalogSyncs(t, st)
	for range 20 {
		if p, r := st.sync(idle.Cursor); r.Status != 200 || p.Cursor != idle.Cursor || len(p.Documents) != 0 {
			t.Fatalf("the same sync again: %d %s", r.Status, r.Body)
		}
	}
	if r := st.Req("GET", "/public/sync?cursor="+url.QueryEscape(idle.Cursor), nil, "If-None-Match", r.Header.Get("ETag")); r.Status != 304 {
		t.Errorf("the kept page's ETag: %d, want 304", r.Status)
	}
	if n := catalogSyncs(t, st); n > asked+1 { // one revalidation, should the 2 s run out meanwhile
		t.Errorf("22 syncs at one cursor reached the catalog %d times, want them answered from the gateway's memory", n-asked)
	}

	// Through the gateway: the author's next sync has it at once.
	var d2 docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "two", "url": "https://x.org"}, 201).JSON(t, &d2)
	p, _ := st.sync(idle.Cursor)
	if len(p.Documents) != 1 || p.Documents[0].ID != d2.ID {
		t.Fatalf("after a write through the gateway: %v, want %s", p.ids(), d2.ID)
	}

	// Past the gateway (as through another gateway replica): the app may
	// be told "nothing new" a while, with the kept page's cursor, and gets
	// the change from the next pages.
	cursor := p.Cursor
	st.sync(cursor) // keeps the empty page of this cursor
	req, err := http.NewRequest("POST", st.ServiceURL("catalog")+"/bo/documents", strings.NewReader(`{"type":"LINK","title":"three","url":"https://x.org"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	SignAsGateway(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 201 {
		t.Fatalf("a write on the catalog's own port: %v %v", res, err)
	}
	_ = res.Body.Close()
	var got []string
	Eventually(t, 10*time.Second, "the write the gateway did not see reaches the sync", func() bool {
		p, r := st.sync(cursor)
		if r.Status != 200 {
			t.Fatalf("sync: %d %s", r.Status, r.Body)
		}
		for _, d := range p.Documents {
			got = append(got, d.Title)
		}
		cursor = p.Cursor
		return slices.Contains(got, "three")
	})
	if strings.Join(got, ",") != "three" {
		t.Errorf("the app was sent %v, want the new document once", got)
	}
}

// catalogSyncs is how many sync requests the catalog has answered.
func catalogSyncs(t *testing.T, st *Stack) int {
	t.Helper()
	n := 0
	for _, m := range syncCount.FindAllStringSubmatch(scrape(t, st, "catalog"), -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

var syncCount = regexp.MustCompile(`(?m)^http_server_request_duration_seconds_count\{[^}]*http_route="/public/sync"[^}]*\} (\d+)$`)

func sameSet(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestRelatedDocuments: the detail's relatedDocuments, pins first, then by
// shared tags; pins are checked.
func TestRelatedDocuments(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"C"}`, 201)
	for _, tg := range []string{"a", "b", "c"} {
		st.Must("POST", "/bo/tags", fmt.Sprintf(`{"id":%q,"name":%q,"categoryId":"c"}`, tg, tg), 201)
	}
	doc := func(title string, pins []string, tags ...string) string {
		var d docJSON
		st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": title, "url": "https://x.org", "tagsIds": tags, "relatedIds": pins}, 201).JSON(t, &d)
		return d.ID
	}
	lone := doc("lone", nil)
	one := doc("one", nil, "a")
	two := doc("two", nil, "a", "b")
	main := doc("main", []string{lone}, "a", "b", "c")
	related := func(side, id string) string {
		var d struct {
			Related []struct {
				ID string `json:"id"`
			} `json:"relatedDocuments"`
			Pins []string `json:"relatedIds"`
		}
		path := "/public/documents/" + id + "/detail"
		if side == "bo" {
			path = "/bo/documents/" + id + "/detail"
		}
		st.Must("GET", path, nil, 200).JSON(t, &d)
		var ids []string
		for _, r := range d.Related {
			ids = append(ids, r.ID)
		}
		return strings.Join(ids, ",") + "|" + strings.Join(d.Pins, ",")
	}
	if got, want := related("public", main), lone+","+two+","+one+"|"; got != want {
		t.Errorf("public detail related %s, want %s", got, want)
	}
	if got, want := related("bo", main), lone+","+two+","+one+"|"+lone; got != want {
		t.Errorf("BO detail related %s, want %s", got, want)
	}
	st.Must("DELETE", "/bo/documents/"+lone, nil, 204)
	if got, want := related("public", main), two+","+one+"|"; got != want {
		t.Errorf("after the pinned one is deleted: %s, want %s", got, want)
	}
	// lone is deleted but already pinned: kept (issue 21 item 9); only pins
	// being added must be live.
	r := st.BO("PATCH", "/bo/documents/"+main, map[string]any{"type": "LINK", "title": "main", "url": "https://x.org", "relatedIds": []string{main, lone, "nope", one, one}})
	if r.Status != 422 || r.Problem(t).Fields() != "relatedIds[0],relatedIds[2],relatedIds[4]" {
		t.Errorf("bad pins: %d %s", r.Status, r.Body)
	}
	r = st.BO("PATCH", "/bo/documents/"+one, map[string]any{"type": "LINK", "title": "one", "url": "https://x.org", "relatedIds": []string{lone}})
	if r.Status != 422 || r.Problem(t).Fields() != "relatedIds[0]" {
		t.Errorf("adding a deleted pin: %d %s, want 422 on relatedIds[0]", r.Status, r.Body)
	}
}

// TestADeletedThenPurgedPinDoesNotBlockEdits (issue 21 item 9): after the
// pinned document is deleted, sending the pinning document's body back is
// 200, not 422 "is deleted"; after the purge it is 200 too, not 422
// "unknown document", and the detail no longer lists the pin.
func TestADeletedThenPurgedPinDoesNotBlockEdits(t *testing.T) {
	st := NewStack(t, map[string][]string{"catalog": {"TRASH_RETENTION=2s"}})
	var pinned, pinning docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "pinned", "url": "https://x.org"}, 201).JSON(t, &pinned)
	body := map[string]any{"type": "LINK", "title": "pinning", "url": "https://x.org", "relatedIds": []string{pinned.ID}}
	st.Must("POST", "/bo/documents", body, 201).JSON(t, &pinning)
	pins := func() []string {
		var d struct {
			Pins []string `json:"relatedIds"`
		}
		st.Must("GET", "/bo/documents/"+pinning.ID+"/detail", nil, 200).JSON(t, &d)
		return d.Pins
	}
	st.Must("DELETE", "/bo/documents/"+pinned.ID, nil, 204)
	body["title"] = "pinning, edited after the pin's deletion"
	if r := st.BO("PATCH", "/bo/documents/"+pinning.ID, body); r.Status != 200 {
		t.Fatalf("edit after the pin's deletion: %d %s, want 200", r.Status, r.Body)
	}
	if got := pins(); !slices.Equal(got, []string{pinned.ID}) {
		t.Errorf("pins after the pin's deletion %v, want it kept (it can be restored)", got)
	}
	Eventually(t, 20*time.Second, "the pinned document is purged", func() bool {
		return st.BO("GET", "/bo/documents/"+pinned.ID+"/detail", nil).Status == 404
	})
	Eventually(t, 10*time.Second, "the detail no longer lists the purged pin", func() bool {
		return len(pins()) == 0
	})
	// The body as the detail now gives it, sent back.
	body["title"], body["relatedIds"] = "pinning, edited after the pin's purge", pins()
	r := st.BO("PATCH", "/bo/documents/"+pinning.ID, body)
	if r.Status != 200 {
		t.Fatalf("edit after the pin's purge: %d %s, want 200", r.Status, r.Body)
	}
	if got := pins(); len(got) != 0 {
		t.Errorf("pins after the edit %v, want none", got)
	}
}

// TestTrashRetention: with a retention of 2 s, a deleted document is
// purged (its detail is 404 on the back-office too), the purge's event is
// published, and a sync cursor from before its deletion is then 410.
func TestTrashRetention(t *testing.T) {
	st := NewStack(t, map[string][]string{"catalog": {"TRASH_RETENTION=2s"}})
	var d docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "T", "url": "https://x.org"}, 201).JSON(t, &d)
	before, _ := st.sync("")
	st.Must("DELETE", "/bo/documents/"+d.ID, nil, 204)
	// Sync as an app does until a page no longer repeats the removal: its
	// cursor is then past the deletion (a page may carry a change newer
	// than its cursor, and repeat it).
	after, removed := before.Cursor, false
	Eventually(t, 5*time.Second, "the deletion reaches the sync, and a cursor past it", func() bool {
		p, _ := st.sync(after)
		after = p.Cursor
		if slices.Contains(p.Removed, d.ID) {
			removed = true
			return false
		}
		return removed
	})
	Eventually(t, 20*time.Second, "the deleted document is purged", func() bool {
		return st.BO("GET", "/bo/documents/"+d.ID+"/detail", nil).Status == 404
	})
	Eventually(t, 20*time.Second, "a cursor from before the deletion expires", func() bool {
		_, r := st.sync(before.Cursor)
		return r.Status == 410 && r.Problem(t).Code == "cursor_expired"
	})
	if _, r := st.sync(after); r.Status != 200 {
		t.Errorf("a cursor from after the deletion: %d %s", r.Status, r.Body)
	}
	Eventually(t, 5*time.Second, "the purge's event is published", func() bool {
		return st.logs.Contains("library.catalog.document.purged")
	})
}
