package e2e

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// consolePages drives the tags, media and settings pages in the browser b
// (signed in as an editor), then checks a viewer gets no edit control on
// them and a refusal from the server.
func consolePages(t *testing.T, b *browser, st *Stack, axe, admin, run string) {
	t.Run("tags and categories", func(t *testing.T) { tagsPage(t, b, st, axe, admin, run) })
	var mediaID string
	t.Run("media", func(t *testing.T) { mediaID = mediaPage(t, b, st, axe, admin, run) })
	t.Run("settings", func(t *testing.T) { settingsPage(t, b, st, axe, admin, run) })
	t.Run("360 px wide", func(t *testing.T) { narrow(t, b, admin) })
	t.Run("a viewer cannot edit tags, media or settings", func(t *testing.T) { viewerPages(t, st, mediaID) })
}

func tagsPage(t *testing.T, b *browser, st *Stack, axe, admin, run string) {
	cat := "theme" + run
	admin = slowAdmin(t, admin, 300*time.Millisecond)
	b.run(t, "tags page", chromedp.Navigate(admin+"/tags"), chromedp.WaitVisible(chromedp.ID("new-category-name")))
	b.accessible(t, axe, "tags")
	b.run(t, "create a category", chromedp.SendKeys(chromedp.ID("new-category-name"), "Thème "+run),
		chromedp.SendKeys(chromedp.ID("new-category-id"), cat),
		submitted(chromedp.Submit(chromedp.ID("new-category-id")), "category was created"))
	nk := "#new-tag-" + cat
	for _, tg := range [][2]string{{"sleep" + run, "Sommeil"}, {"food" + run, "Alimentation"}} {
		b.run(t, "add the tag "+tg[1], chromedp.SendKeys(chromedp.CSS(nk+"-name"), tg[1]),
			chromedp.SendKeys(chromedp.CSS(nk+"-id"), tg[0]), submitted(chromedp.Submit(chromedp.CSS(nk+"-id")), "tag was created"))
	}
	// A name taken in the category: the API's 409 next to the field, the id kept as typed.
	b.run(t, "a duplicate tag", chromedp.SendKeys(chromedp.CSS(nk+"-name"), "sommeil"),
		chromedp.SendKeys(chromedp.CSS(nk+"-id"), "other"+run), chromedp.Submit(chromedp.CSS(nk+"-id")),
		chromedp.WaitVisible(chromedp.CSS(nk+"-name-error")))
	if id := get(t, b, "typed id", chromedp.Value(chromedp.CSS(nk+"-id"))); id != "other"+run {
		t.Errorf("after a 409 the id field holds %q, want what was typed", id)
	}
	b.accessible(t, axe, "tags (a field in error)")
	b.run(t, "rename a tag", chromedp.SetValue(chromedp.ID("tag-food"+run+"-name"), "Nutrition"),
		submitted(chromedp.Submit(chromedp.ID("tag-food"+run+"-name")), "tag was renamed"))
	var cats []struct {
		ID   string
		Tags []struct{ ID, Name string }
	}
	st.Must("GET", "/bo/tags-categories", nil, 200).JSON(t, &cats)
	var names []string
	for _, c := range cats {
		if c.ID == cat {
			for _, tg := range c.Tags {
				names = append(names, tg.Name)
			}
		}
	}
	if strings.Join(names, ",") != "Sommeil,Nutrition" {
		t.Errorf("the category's tags are %v, want Sommeil and Nutrition", names)
	}
	confirmCategoryDeletion(t, b, st, axe, admin, cat, "sleep"+run)
}

// confirmCategoryDeletion: the confirm page says, before, which tags go
// and how many documents lose them; then the deletion happens.
func confirmCategoryDeletion(t *testing.T, b *browser, st *Stack, axe, admin, cat, tag string) {
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Dormir " + cat,
		"url": "https://example.org/dormir", "tagsIds": []string{tag}}, 201)
	b.run(t, "the count on the page", chromedp.Navigate(admin+"/tags"), chromedp.WaitVisible(chromedp.ID("cat-"+cat)))
	if h := get(t, b, "category heading", chromedp.Text(chromedp.ID("cat-"+cat))); !strings.Contains(h, "1 documents") {
		t.Errorf("the category's heading says %q, want 1 document using it", h)
	}
	b.run(t, "ask to delete", chromedp.Click(chromedp.CSS(`a[href="/console/categories/`+cat+`/delete"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action="/console/categories/`+cat+`/delete"]`)))
	b.accessible(t, axe, "confirm a deletion")
	said := get(t, b, "confirm text", chromedp.Text(chromedp.CSS("main .card")))
	for _, want := range []string{"its 2 tags: Sommeil, Nutrition", "1 documents lose those tags"} {
		if !strings.Contains(said, want) {
			t.Errorf("the confirm page says %q, want it to say %q", said, want)
		}
	}
	b.run(t, "delete", submitted(chromedp.Click(chromedp.CSS(`form[action="/console/categories/`+cat+`/delete"] button`)),
		"category and its tags were deleted"))
	if r := st.Req("GET", "/bo/tags-categories", nil); strings.Contains(string(r.Body), `"`+cat+`"`) {
		t.Error("the category is still listed after its deletion")
	}
}

func mediaPage(t *testing.T, b *browser, st *Stack, axe, admin, run string) string {
	dir := t.TempDir()
	png, pdf := filepath.Join(dir, "schéma-"+run+".png"), filepath.Join(dir, "notice-"+run+".pdf")
	pngData := unique(pngBytes, "media page "+run)
	for p, data := range map[string][]byte{png: pngData, pdf: unique(pdfBytes, "media page "+run)} {
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.run(t, "media page", chromedp.Navigate(admin+"/media"), chromedp.WaitVisible(chromedp.ID("files")))
	b.accessible(t, axe, "media")
	b.run(t, "upload two files", chromedp.SetUploadFiles(chromedp.ID("files"), []string{png, pdf}),
		chromedp.Submit(chromedp.ID("files")), chromedp.WaitVisible(chromedp.ID("upload-results")))
	if said := get(t, b, "results", chromedp.Text(chromedp.ID("upload-results"))); strings.Count(said, "was stored") != 2 {
		t.Errorf("after uploading two new files the page says %q", said)
	}
	b.accessible(t, axe, "media (after an upload)")
	b.run(t, "the same image again", chromedp.SetUploadFiles(chromedp.ID("files"), []string{png}),
		chromedp.Submit(chromedp.ID("files")), chromedp.WaitVisible(chromedp.ID("upload-results")))
	if said := get(t, b, "results", chromedp.Text(chromedp.ID("upload-results"))); !strings.Contains(said, "already in the library") {
		t.Errorf("after uploading the same bytes again the page says %q", said)
	}
	var medias []struct{ ID, Name string }
	st.Must("GET", "/bo/medias", nil, 200).JSON(t, &medias)
	id := ""
	for _, m := range medias {
		if m.Name == filepath.Base(png) {
			id = m.ID
		}
	}
	if id == "" {
		t.Fatalf("the uploaded image is not among the media %v", medias)
	}
	row := get(t, b, "the image's row", chromedp.Text(chromedp.ID("media-"+id)))
	if !strings.Contains(row, "1 × 1") {
		t.Errorf("the image's row %q does not show its dimensions 1 × 1", row)
	}
	mediaInUse(t, b, st, id, run)
	consoleDownload(t, st, id, pngData)
	return id
}

// mediaInUse: deleting an image a document uses is refused, with the API's reason.
func mediaInUse(t *testing.T, b *browser, st *Stack, id, run string) {
	title := "Schéma " + run
	st.Must("POST", "/bo/documents", map[string]any{"type": "MARKDOWN", "title": title,
		"content": "![schéma](x)", "imagesIds": []string{id}, "tagsIds": []string{}}, 201)
	b.run(t, "delete the image in use", chromedp.Click(chromedp.CSS(`#media-`+id+` summary`)), chromedp.Click(chromedp.CSS(`form[action="/console/media/`+id+`/delete"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#media-`+id+` .field-error`)))
	said := get(t, b, "refusal", chromedp.Text(chromedp.CSS(`#media-`+id+` .field-error`)))
	if !strings.Contains(said, "Not deleted") || !strings.Contains(said, title) {
		t.Errorf("the refused deletion says %q, want the API's reason and the title of the document using it", said)
	}
	t.Logf("the refusal: %s", said)
	st.Must("GET", "/bo/medias/"+id, nil, 200)
}

func consoleDownload(t *testing.T, st *Stack, id string, want []byte) {
	res, err := consoleClient(t, st, Token).Get(st.AdminURL + "/console/media/" + id + "/download")
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	if res.StatusCode != 200 || body != string(want) || !strings.HasPrefix(res.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("download: %d, %d bytes, Content-Disposition %q; want 200, the %d bytes uploaded, an attachment",
			res.StatusCode, len(body), res.Header.Get("Content-Disposition"), len(want))
	}
}

func settingsPage(t *testing.T, b *browser, st *Stack, axe, admin, run string) {
	var before struct{ ModeratorEmail string }
	st.Must("GET", "/bo/config", nil, 200).JSON(t, &before)
	b.run(t, "settings page", chromedp.Navigate(admin+"/settings"), chromedp.WaitVisible(chromedp.ID("moderatorEmail")))
	b.accessible(t, axe, "settings")
	addr := "moderation-" + run + "@example.org"
	b.run(t, "set the address", chromedp.SetValue(chromedp.ID("moderatorEmail"), addr),
		submitted(chromedp.Submit(chromedp.ID("moderatorEmail")), "settings were saved"))
	var after struct{ ModeratorEmail string }
	st.Must("GET", "/bo/config", nil, 200).JSON(t, &after)
	if after.ModeratorEmail != addr {
		t.Errorf("moderatorEmail = %q after the save, want %q", after.ModeratorEmail, addr)
	}
	// The browser checks the address too; a script does not: the API's words next to the field.
	res, err := consoleClient(t, st, Token).PostForm(admin+"/settings", url.Values{"moderatorEmail": {"Mod <mod@example.org>"}})
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); res.StatusCode != 422 || !strings.Contains(body, `id="moderatorEmail-error"`) || !strings.Contains(body, `value="Mod &lt;mod@example.org&gt;"`) {
		t.Errorf("a bad address: %d, want 422 with the error next to the field and the address as typed: %s", res.StatusCode, body)
	}
	st.Must("PUT", "/bo/config", map[string]string{"moderatorEmail": before.ModeratorEmail}, 200)
}

func viewerPages(t *testing.T, st *Stack, mediaID string) {
	c := consoleClient(t, st, ViewerToken)
	for path, editOnly := range map[string][]string{
		"/console/tags":     {`action="/console/categories"`, `action="/console/tags"`, "/delete"},
		"/console/media":    {`type="file"`, "/delete"},
		"/console/settings": {">Save<"},
	} {
		res, err := c.Get(st.AdminURL + path)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, res)
		for _, s := range editOnly {
			if res.StatusCode != 200 || strings.Contains(body, s) {
				t.Errorf("the viewer's %s: %d, has %q (an edit control)", path, res.StatusCode, s)
			}
		}
	}
	for path, form := range map[string]url.Values{
		"/console/categories":                   {"id": {"viewer"}, "name": {"Viewer"}},
		"/console/settings":                     {"moderatorEmail": {"viewer@example.org"}},
		"/console/media/" + mediaID + "/delete": nil,
	} {
		res, err := c.PostForm(st.AdminURL+path, form)
		if err != nil {
			t.Fatal(err)
		}
		if readAll(t, res); res.StatusCode != http.StatusForbidden {
			t.Errorf("a viewer's POST %s: %d, want 403", path, res.StatusCode)
		}
	}
}

// narrow: at 360 px the new pages scroll down, never sideways (a wide
// table scrolls inside its own box).
func narrow(t *testing.T, b *browser, admin string) {
	b.run(t, "360 px", chromedp.EmulateViewport(360, 800))
	defer b.run(t, "back to 1440 px", chromedp.EmulateViewport(1440, 1000))
	for _, page := range []string{"/tags", "/media", "/settings"} {
		b.run(t, page, chromedp.Navigate(admin+page), chromedp.WaitVisible(chromedp.ID("main")))
		wide := get(t, b, page+" width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
		if wide > 361 {
			t.Errorf("%s at 360 px is %d px wide: it scrolls sideways (screenshot: %s)", page, wide, b.screenshot(t))
		}
	}
}
