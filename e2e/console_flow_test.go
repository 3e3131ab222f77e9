package e2e

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// xssTitle is a title a careless page would run.
const xssTitle = `<script>alert("title")</script><img src=x onerror=alert(1)>`

// TestConsoleInABrowser drives the console in a real Chromium against a
// real stack, as an editor and as a viewer (issue 27's list), with an
// accessibility check of each page.
func TestConsoleInABrowser(t *testing.T) {
	consoleFlow(t, NewStack(t, nil))
}

// consoleFlow is the browser test on st; tags have ids of their own, so
// it can run again on the same library.
func consoleFlow(t *testing.T, st *Stack) {
	b := newBrowser(t)
	b.failShot(t)
	axe := axeSource(t)
	admin := st.AdminURL + "/console"
	run := strconv.FormatInt(time.Now().UnixNano()%1e9, 36)
	tag := func(name string) string { return name + run }
	for _, c := range [][2]string{{"topic", "Sujet"}, {"audience", "Public"}} {
		st.Must("POST", "/bo/tags-categories", map[string]string{"id": tag(c[0]), "name": c[1] + " " + run}, 201)
	}
	for _, tg := range [][3]string{{"flu", "Grippe", "topic"}, {"covid", "Covid", "topic"}, {"kids", "Enfants", "audience"}, {"adults", "Adultes", "audience"}} {
		st.Must("POST", "/bo/tags", map[string]string{"id": tag(tg[0]), "name": tg[1], "categoryId": tag(tg[2])}, 201)
	}
	var before []struct{ IsDeleted bool }
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &before)
	live, deleted := 0, 0
	for _, d := range before {
		if d.IsDeleted {
			deleted++
		} else {
			live++
		}
	}
	docs := map[string]string{} // type -> id

	t.Run("sign in", func(t *testing.T) {
		b.run(t, "open the console", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("token")))
		b.accessible(t, axe, "sign-in")
		b.axeWorks(t, axe)
		b.run(t, "sign in", chromedp.SendKeys(chromedp.ID("token"), Token), chromedp.Submit(chromedp.ID("token")),
			chromedp.WaitVisible(chromedp.ID("filters")))
		b.accessible(t, axe, "documents (empty)")
	})
	t.Run("create one document of each type", func(t *testing.T) {
		pdf := filepath.Join(t.TempDir(), "calendrier.pdf")
		if err := os.WriteFile(pdf, unique(pdfBytes, "console"+run), 0o644); err != nil {
			t.Fatal(err)
		}
		docs["LINK"] = b.create(t, axe, "LINK", xssTitle, []string{tag("flu"), tag("kids")},
			chromedp.SendKeys(chromedp.ID("url"), "https://example.org/a"))
		docs["MARKDOWN"] = b.create(t, axe, "MARKDOWN", "Bien dormir", []string{tag("covid"), tag("kids")},
			chromedp.SendKeys(chromedp.ID("content"), "# Dormir\n\n[clic](javascript:alert(2))"))
		docs["HTML"] = b.create(t, axe, "HTML", "Se laver les mains", []string{tag("flu"), tag("adults")},
			chromedp.SendKeys(chromedp.ID("content"), `<h1>Mains</h1><p onclick="alert(3)">30 s</p><script>alert(4)</script>`))
		docs["PDF"] = b.create(t, axe, "PDF", "Calendrier", []string{tag("flu")},
			chromedp.SetUploadFiles(chromedp.ID("upload"), []string{pdf}))
		var d struct{ File struct{ Name string } }
		st.Must("GET", "/bo/documents/"+docs["PDF"]+"/detail", nil, 200).JSON(t, &d)
		if d.File.Name != "calendrier.pdf" {
			t.Errorf("the PDF document's file is %q, want the uploaded calendrier.pdf", d.File.Name)
		}
	})
	t.Run("filter with two categories and a tag name", func(t *testing.T) {
		b.run(t, "documents", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("filters")))
		b.wantShown(t, "no filter", live+4)
		b.run(t, "tags", chromedp.Click(chromedp.CSS(`input[value="`+tag("flu")+`"]`)),
			chromedp.Click(chromedp.CSS(`input[value="`+tag("covid")+`"]`)), chromedp.Click(chromedp.CSS(`input[value="`+tag("kids")+`"]`)))
		b.wantShown(t, "(Grippe or Covid) and Enfants", 2)
		b.run(t, "search", chromedp.SendKeys(chromedp.ID("q"), "grippe"))
		b.wantShown(t, "... and the text of a tag name only", 1)
		shownTitle := get(t, b, "shown title", chromedp.Text(chromedp.CSS(`#rows tr:not([hidden]) a`)))
		if shownTitle != xssTitle {
			t.Errorf("the row shows %q, want the title as text %q", shownTitle, xssTitle)
		}
		// Without the script, the same criteria in the URL give the same rows.
		res, err := consoleClient(t, st, Token).Get(admin + "/?tag=" + tag("flu") + "&tag=" + tag("covid") + "&tag=" + tag("kids") + "&q=grippe")
		if err != nil {
			t.Fatal(err)
		}
		if body := readAll(t, res); !strings.Contains(body, `<span id="shown">1</span>`) {
			t.Errorf("the server-side filter shows another count: %s", body)
		}
	})
	t.Run("delete, find in the deleted view, restore", func(t *testing.T) {
		id := docs["LINK"]
		b.run(t, "delete", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("filters")),
			chromedp.Click(chromedp.CSS(`a[href="/console/documents/`+id+`/delete"]`)), chromedp.WaitReady(chromedp.CSS(`input[name=confirmed]`)),
			submitted(chromedp.Click(chromedp.CSS(`main form button`)), "was deleted"))
		b.wantShown(t, "after the delete", live+3)
		b.run(t, "deleted view", chromedp.Click(chromedp.ID("deleted")))
		b.wantShown(t, "deleted view", deleted+1)
		b.accessible(t, axe, "documents (deleted view)")
		b.run(t, "restore", submitted(chromedp.Click(chromedp.CSS(`form[action="/console/documents/`+id+`/restore"] button`)), "was restored"))
		b.wantShown(t, "after the restore", live+4)
	})
	t.Run("pin a related document", func(t *testing.T) {
		pick := `#related-matches input[value="` + docs["MARKDOWN"] + `"]`
		b.run(t, "edit", chromedp.Navigate(admin+"/documents/"+docs["HTML"]), chromedp.WaitVisible(chromedp.ID("relatedQ")),
			chromedp.SendKeys(chromedp.ID("relatedQ"), "dormir"), chromedp.WaitVisible(chromedp.CSS(pick)),
			chromedp.Click(chromedp.CSS(pick)), chromedp.WaitVisible(chromedp.CSS(`#related-pinned input[value="`+docs["MARKDOWN"]+`"]`)),
			submitted(chromedp.Submit(chromedp.ID("title")), "was saved"))
		b.accessible(t, axe, "edit HTML")
		var d struct{ RelatedIds []string }
		st.Must("GET", "/bo/documents/"+docs["HTML"]+"/detail", nil, 200).JSON(t, &d)
		if len(d.RelatedIds) != 1 || d.RelatedIds[0] != docs["MARKDOWN"] {
			t.Errorf("relatedIds = %v, want [%s]", d.RelatedIds, docs["MARKDOWN"])
		}
	})
	t.Run("find a document to pin without script", func(t *testing.T) {
		c := consoleClient(t, st, Token)
		res := must(c.Get(admin + "/documents/" + docs["LINK"]))
		etag := regexp.MustCompile(`name="etag" value="([^"]*)"`).FindStringSubmatch(readAll(t, res))
		if etag == nil {
			t.Fatal("no etag in the edit form")
		}
		form := url.Values{"type": {"LINK"}, "title": {"Typed, not saved"}, "url": {"https://example.org/a"}, "etag": {html.UnescapeString(etag[1])},
			"mode": {"live"}, "relatedQ": {"Dormir"}, "findRelated": {"1"}}
		res = must(c.PostForm(admin+"/documents/"+docs["LINK"], form))
		body := readAll(t, res)
		if res.StatusCode != 200 || !strings.Contains(body, `name="related" value="`+docs["MARKDOWN"]+`"`) || !strings.Contains(body, `value="Typed, not saved"`) {
			t.Errorf("Find without script: %d, want the form back with what was typed and the matching document to tick", res.StatusCode)
		}
		var d struct{ Title string }
		if st.Must("GET", "/bo/documents/"+docs["LINK"]+"/detail", nil, 200).JSON(t, &d); d.Title == "Typed, not saved" {
			t.Error("Find saved the form")
		}
	})
	consolePages(t, b, st, axe, admin, run)
	consoleUX(t, b, st, axe, admin, run, docs["HTML"])
	t.Run("a failed save keeps what was typed", func(t *testing.T) { failedSaves(t, b, st, admin, docs["LINK"], run) })
	t.Run("a viewer cannot edit", func(t *testing.T) { viewerCannotEdit(t, st, docs["PDF"]) })
	t.Run("a cross-origin POST is refused", func(t *testing.T) { crossOriginRefused(t, st, docs["PDF"]) })
	t.Run("a form posted twice makes one document", func(t *testing.T) { postedTwice(t, st, run) })
	t.Run("another deployment's cookie signs nobody in", func(t *testing.T) { foreignCookie(t, st) })
	if n := b.dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened: stored content ran as script", n)
	}
	if path := os.Getenv("DOCLIB_CONSOLE_SCREENSHOT"); path != "" {
		b.run(t, "documents", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("filters")))
		png := get(t, b, "screenshot", chromedp.FullScreenshot(100))
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// create fills the new-document form of type typ and returns the new id.
func (b *browser) create(t *testing.T, axe, typ, title string, tags []string, fill ...chromedp.Action[chromedp.Void]) string {
	t.Helper()
	actions := []chromedp.Action[chromedp.Void]{chromedp.Navigate(strings.TrimSuffix(b.admin(t), "/") + "/documents/new?type=" + typ),
		chromedp.WaitVisible(chromedp.ID("title")), chromedp.SendKeys(chromedp.ID("title"), title)}
	for _, tg := range tags {
		actions = append(actions, chromedp.Click(chromedp.CSS(`input[name=tag][value="`+tg+`"]`)))
	}
	actions = append(append(actions, fill...), submitted(chromedp.Submit(chromedp.ID("title")), "was created"))
	b.run(t, "create "+typ, actions...)
	b.accessible(t, axe, "edit "+typ)
	path := b.location(t).Path
	id := strings.TrimPrefix(path, "/console/documents/")
	if id == path || id == "new" {
		t.Fatalf("after creating a %s document the browser is at %s", typ, path)
	}
	return id
}

// admin is the console's base URL, from the page shown.
func (b *browser) admin(t *testing.T) string {
	u := b.location(t)
	return u.Scheme + "://" + u.Host + "/console/"
}

// wantShown checks the count of rows shown and the count the page says.
func (b *browser) wantShown(t *testing.T, what string, want int) {
	t.Helper()
	// The script filters in the next frame: wait for it.
	get(t, b, what, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => setTimeout(() => r(true), 0)))`, chromedp.EvalAwaitPromise))
	n := get(t, b, what, chromedp.Evaluate[int](`document.querySelectorAll("#rows tr:not([hidden])").length`))
	said := get(t, b, what, chromedp.Text(chromedp.ID("shown")))
	if n != want || said != strconv.Itoa(want) {
		t.Errorf("%s: %d rows shown, the page says %s; want %d (screenshot: %s)", what, n, said, want, b.screenshot(t))
	}
}

func viewerCannotEdit(t *testing.T, st *Stack, id string) {
	c := consoleClient(t, st, ViewerToken)
	res, err := c.Get(st.AdminURL + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); strings.Contains(body, "/delete") || strings.Contains(body, "New document") {
		t.Errorf("the viewer's documents page has edit controls")
	}
	res, err = c.Get(st.AdminURL + "/console/documents/" + id)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, res); !strings.Contains(body, "<fieldset disabled>") || strings.Contains(body, ">Save<") {
		t.Errorf("the viewer's edit page is editable")
	}
	res, err = c.PostForm(st.AdminURL+"/console/documents/"+id+"/delete", nil)
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, res); res.StatusCode != http.StatusForbidden {
		t.Errorf("a viewer's delete through the console: %d, want 403", res.StatusCode)
	}
	if r := st.Req("DELETE", "/bo/documents/"+id, nil, "Authorization", "Bearer "+ViewerToken); r.Status != http.StatusForbidden {
		t.Errorf("a viewer's delete through the API: %d, want 403", r.Status)
	}
}

// postedTwice sends the same new-document form twice (a double click, a
// resent form): the form's Idempotency-Key makes the second answer the
// first's document.
func postedTwice(t *testing.T, st *Stack, run string) {
	c := consoleClient(t, st, Token)
	page := readAll(t, must(c.Get(st.AdminURL+"/console/documents/new?type=LINK")))
	m := regexp.MustCompile(`name="key" value="([A-Za-z0-9_-]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no Idempotency-Key in the new-document form:\n%s", page)
	}
	title := "Deux fois " + run
	form := url.Values{"key": {m[1]}, "type": {"LINK"}, "title": {title}, "url": {"https://example.org/twice"}}
	for i := range 2 {
		res := must(c.PostForm(st.AdminURL+"/console/documents/new", form))
		if readAll(t, res); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("post %d: %d, want 303", i+1, res.StatusCode)
		}
	}
	var all []struct{ Title string }
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &all)
	n := 0
	for _, d := range all {
		if d.Title == title {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d documents titled %q after the form was posted twice, want 1", n, title)
	}
}

func must(res *http.Response, err error) *http.Response {
	if err != nil {
		panic(err)
	}
	return res
}

func crossOriginRefused(t *testing.T, st *Stack, id string) {
	c := consoleClient(t, st, Token)
	req, _ := http.NewRequest("POST", st.AdminURL+"/console/documents/"+id+"/delete", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if readAll(t, res); res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-origin delete: %d, want 403", res.StatusCode)
	}
	var d struct{ IsDeleted bool }
	st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
	if d.IsDeleted {
		t.Error("the cross-origin delete deleted the document")
	}
}

func foreignCookie(t *testing.T, st *Stack) {
	req, _ := http.NewRequest("GET", st.AdminURL+"/console/", nil)
	req.Header.Set("Cookie", "doclib_console="+strings.Repeat("A", 43))
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, res)
	if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || loc != "/console/sign-in?why=expired" {
		t.Errorf("a foreign session cookie: %d to %q, want 303 to the sign-in", res.StatusCode, loc)
	}
}

// submitted runs act, which leaves the page (a form sent, a button
// pressed), and waits for the next page to say words in its notice.
//
// The page act leaves is marked first, and only an unmarked page counts:
// two tags created one after the other both say "The tag was created", and
// a wait that took the first page's notice for the second's let the next
// step type into a form that was about to go ("Could not find node with
// given id", 3 runs of make test in about 8).
func submitted(act chromedp.Action[chromedp.Void], words string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.Evaluate[bool](`window.doclibLeft = true`)(ctx, tg); err != nil {
			return err
		}
		if _, err := act(ctx, tg); err != nil {
			return err
		}
		_, err := waitFor(`!window.doclibLeft && (document.querySelector(".notice") || {textContent: ""}).textContent.includes(`+
			strconv.Quote(words)+`)`)(ctx, tg)
		return err
	})
}

// waitFor waits until expr is true on the page, asking again while the
// page is changing (an evaluation then fails: its document is gone).
func waitFor(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for {
			if ok, err := chromedp.Evaluate[bool](expr)(ctx, tg); err == nil && ok {
				return nil
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("the page never made %s true: %w", expr, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// failedSaves: a 422 shows the API's words next to the field and the form
// with what was typed; so does a 412 (someone else saved in between).
func failedSaves(t *testing.T, b *browser, st *Stack, admin, linkID, run string) {
	b.run(t, "create with a bad URL", chromedp.Navigate(admin+"/documents/new?type=LINK"), chromedp.WaitVisible(chromedp.ID("title")),
		chromedp.SendKeys(chromedp.ID("title"), "Typed title"), chromedp.SetValue(chromedp.ID("url"), "not a url"),
		chromedp.Submit(chromedp.ID("title")), chromedp.WaitVisible(chromedp.ID("url-error")))
	if title := get(t, b, "title", chromedp.Value(chromedp.ID("title"))); title != "Typed title" {
		t.Errorf("after a 422 the title holds %q, want what was typed", title)
	}
	if msg := get(t, b, "url error", chromedp.Text(chromedp.ID("url-error"))); msg == "" {
		t.Error("no message next to the url field")
	}
	b.run(t, "open the LINK", chromedp.Navigate(admin+"/documents/"+linkID), chromedp.WaitVisible(chromedp.ID("title")))
	var d map[string]any
	st.Must("GET", "/bo/documents/"+linkID+"/detail", nil, 200).JSON(t, &d)
	st.Must("PATCH", "/bo/documents/"+linkID, map[string]any{"type": "LINK", "title": "Changed in another tab",
		"url": "https://example.org/other", "tagsIds": d["tagsIds"]}, 200)
	b.run(t, "save over it", chromedp.SetValue(chromedp.ID("title"), "Mine"), chromedp.Submit(chromedp.ID("title")),
		chromedp.WaitVisible(chromedp.CSS(".error")))
	if title := get(t, b, "title", chromedp.Value(chromedp.ID("title"))); title != "Mine" {
		t.Errorf("after a 412 the title holds %q, want what was typed", title)
	}
	if msg := get(t, b, "error", chromedp.Text(chromedp.CSS(".error"))); !strings.Contains(msg, "changed this document") {
		t.Errorf("after a 412 the page says %q", msg)
	}
	saveOverTheirs(t, b, st, linkID)
	theyChangedTags(t, b, st, admin, linkID, run)
	// Put the title back for the checks that follow.
	st.Must("PATCH", "/bo/documents/"+linkID, map[string]any{"type": "LINK", "title": xssTitle,
		"url": "https://example.org/a", "tagsIds": d["tagsIds"]}, 200)
}
