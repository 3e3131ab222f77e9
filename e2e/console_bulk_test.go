package e2e

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// bulkActions: three documents (one live, one a draft, one with pending
// changes) ticked in the list and tagged, published, deleted after a
// confirmation, then brought back by Undo; the list shows each one's
// states; the same form works without script.
func bulkActions(t *testing.T, b *browser, st *Stack, axe, admin string) {
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "bulkcat", "name": "Audience"}, 201)
	st.Must("POST", "/bo/tags", map[string]string{"id": "bulkteachers", "name": "Teachers", "categoryId": "bulkcat"}, 201)
	ids := map[string]string{}
	for _, name := range []string{"live", "draft", "pending"} {
		body := map[string]any{"type": "LINK", "title": "Herbarium " + name + " sheet", "url": "https://example.org/herbarium/" + name}
		if name == "draft" {
			body["status"] = "draft"
		}
		var d struct{ ID string }
		st.Must("POST", "/bo/documents", body, 201).JSON(t, &d)
		ids[name] = d.ID
	}
	st.Must("PATCH", "/bo/documents/"+ids["pending"], map[string]any{"type": "LINK", "title": "Herbarium pending sheet (revised)",
		"url": "https://example.org/herbarium/pending", "draft": true}, 200)

	b.run(t, "list", chromedp.Navigate(admin+"/?q=herbarium"), chromedp.WaitVisible(chromedp.ID("bulk")))
	b.wantShown(t, "the three documents", 3)
	badges := get(t, b, "badges", chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(document.querySelectorAll("#rows tr:not([hidden])")).map(r => [r.querySelector("input[name=id]").value, r.querySelector(".badges").textContent.trim().replace(/\s+/g, " ")]))`))
	for name, want := range map[string]string{"live": "Published", "draft": "Draft", "pending": "Published Pending changes"} {
		if badges[ids[name]] != want {
			t.Errorf("the %s document's badges say %q, want %q", name, badges[ids[name]], want)
		}
	}
	b.accessible(t, axe, "documents with bulk actions")
	tickAll := chromedp.Click(chromedp.ID("select-all"))
	b.run(t, "tag them", tickAll, chromedp.SetValue(chromedp.ID("bulk-action"), "tag-add"), chromedp.SetValue(chromedp.ID("bulk-tag"), "bulkteachers"),
		submitted(chromedp.Click(chromedp.CSS("#bulk button")), "3 documents were changed"))
	for name, id := range ids {
		var d struct {
			TagsIds []string
			Draft   *struct{ TagsIds []string }
		}
		st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
		got := d.TagsIds
		if name == "pending" {
			if slices.Contains(d.TagsIds, "bulkteachers") {
				t.Error("the tag went to the live version of the document with pending changes: their publication would drop it")
			}
			got = d.Draft.TagsIds
		}
		if !slices.Contains(got, "bulkteachers") {
			t.Errorf("the %s document's tags are %v after the bulk tag", name, got)
		}
	}
	b.run(t, "publish them", chromedp.Navigate(admin+"/?q=herbarium"), chromedp.WaitVisible(chromedp.ID("bulk")), tickAll,
		chromedp.SetValue(chromedp.ID("bulk-action"), "publish"),
		submitted(chromedp.Click(chromedp.CSS("#bulk button")), "2 documents were published. 1 other had nothing to change."))
	if d := st.detail(t, ids["draft"]); d.Status != "published" {
		t.Errorf("the draft is %s after the bulk publish", d.Status)
	}
	if d := st.detail(t, ids["pending"]); d.Draft != nil || d.Title != "Herbarium pending sheet (revised)" {
		t.Errorf("the pending changes were not published: title %q, pending %v", d.Title, d.Draft)
	}
	b.run(t, "delete them", chromedp.Navigate(admin+"/?q=herbarium"), chromedp.WaitVisible(chromedp.ID("bulk")), tickAll,
		chromedp.SetValue(chromedp.ID("bulk-action"), "delete"), chromedp.Click(chromedp.CSS("#bulk button")),
		chromedp.WaitReady(chromedp.CSS(`input[name=confirmed]`)))
	if text := get(t, b, "confirm", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(text, "Herbarium live sheet") || !strings.Contains(text, "Delete 3 documents") {
		t.Errorf("the confirmation says %q, want the documents named", text)
	}
	b.accessible(t, axe, "delete confirmation")
	b.run(t, "confirm", submitted(chromedp.Click(chromedp.CSS("main form button")), "3 documents were deleted"))
	for _, id := range ids {
		if !isDeleted(t, st, id) {
			t.Errorf("%s is not deleted after the bulk delete", id)
		}
	}
	b.run(t, "undo", submitted(chromedp.Click(chromedp.ID("undo")), "3 documents were restored"))
	for _, id := range ids {
		if isDeleted(t, st, id) {
			t.Errorf("%s is still deleted after Undo", id)
		}
	}
	bulkWithoutScript(t, st, admin, ids["live"])
}

func isDeleted(t *testing.T, st *Stack, id string) bool {
	var d struct{ IsDeleted bool }
	st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
	return d.IsDeleted
}

// bulkWithoutScript: the row's Delete link, its confirmation and Undo are
// plain links and forms.
func bulkWithoutScript(t *testing.T, st *Stack, admin, id string) {
	c := consoleClient(t, st, Token)
	res, err := c.Get(admin + "/documents/" + id + "/delete")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); res.StatusCode != http.StatusOK || !strings.Contains(body, "Herbarium live sheet") || isDeleted(t, st, id) {
		t.Fatalf("the Delete link's page: %d, want a confirmation naming the document that deletes nothing yet", res.StatusCode)
	}
	res = must(c.PostForm(admin+"/documents/bulk", url.Values{"action": {"delete"}, "confirmed": {"1"}, "id": {id}}))
	res.Body.Close()
	back, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || back.Query()["undo"][0] != id || !isDeleted(t, st, id) {
		t.Fatalf("the confirmed delete: %d to %s, want 303 to the list offering to undo it", res.StatusCode, back)
	}
	res = must(c.Get(admin + "/?" + back.RawQuery))
	if body := readAll(t, res); !strings.Contains(body, `id="undo"`) {
		t.Error("the list after a delete offers no Undo")
	}
	res = must(c.PostForm(admin+"/documents/bulk", url.Values{"action": {"restore"}, "id": {id}}))
	res.Body.Close()
	if isDeleted(t, st, id) {
		t.Error("Undo without script did not restore the document")
	}
	res = must(c.PostForm(admin+"/documents/bulk", url.Values{"action": {"publish"}}))
	res.Body.Close()
	if loc := res.Header.Get("Location"); !strings.Contains(loc, "none-selected") {
		t.Errorf("an action with nothing ticked goes to %q, want the list saying so", loc)
	}
}

// shortcuts: / focuses the search, n opens a new document, Ctrl+S saves
// the edit form, ? opens the help page that lists them.
func shortcuts(t *testing.T, b *browser, st *Stack, axe, admin string) {
	b.run(t, "/ searches", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("filters")),
		chromedp.KeyEvent("/"), waitFor(`document.activeElement.id === "q"`), chromedp.KeyEvent("\x1b"),
		waitFor(`document.activeElement.id !== "q"`))
	b.run(t, "n: new document", chromedp.KeyEvent("n"), waitFor(`location.pathname === "/console/documents/new"`))
	var d struct{ ID string }
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Seed bank inventory", "url": "https://example.org/seeds"}, 201).JSON(t, &d)
	b.run(t, "Ctrl+S saves", chromedp.Navigate(admin+"/documents/"+d.ID), chromedp.WaitVisible(chromedp.ID("title")),
		chromedp.SetValue(chromedp.ID("title"), "Seed bank inventory 2026"),
		submitted(chromedp.KeyEvent("s", chromedp.KeyModifiers(chromedp.ModifierCtrl)), "saved"))
	if got := st.detail(t, d.ID); got.Title != "Seed bank inventory 2026" {
		t.Errorf("after Ctrl+S the title is %q", got.Title)
	}
	b.run(t, "? opens the help", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("filters")),
		chromedp.KeyEvent("?"), chromedp.WaitVisible(chromedp.CSS("table.keys")))
	if text := get(t, b, "help", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(text, "New document") || !strings.Contains(text, "Save the document") {
		t.Errorf("the help page says %q, want the shortcuts listed", text)
	}
	b.accessible(t, axe, "help")
}
