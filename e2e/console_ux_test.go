package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// consoleUX drives the live preview, the media page's drag and drop and a
// document's history (htmlID: a document edited once) in b.
func consoleUX(t *testing.T, b *browser, st *Stack, axe, admin, run, htmlID string) {
	t.Run("a live preview runs nothing", func(t *testing.T) { livePreview(t, b, axe, admin) })
	t.Run("a preview without script", func(t *testing.T) { previewWithoutScript(t, st, run) })
	t.Run("the preview is not a write", func(t *testing.T) { previewIsSafe(t, st, run) })
	t.Run("drop files on the media page", func(t *testing.T) { mediaDragAndDrop(t, b, st, axe, admin, run) })
	t.Run("the history of a document, and a restore", func(t *testing.T) { revisionsView(t, b, st, axe, admin, htmlID) })
	t.Run("a preview after a 412 keeps their version", func(t *testing.T) { previewAfterConflict(t, st, htmlID) })
}

// unsafeMarkdown is unsaved text that would run script if a preview
// showed it as typed.
const unsafeMarkdown = "# Aperçu\n\n[clic](javascript:alert(5))\n\n<script>alert(6)</script>\n"

// livePreview types unsafe Markdown in a new document and waits for the
// script's preview: rendered, sanitised, in a frame that runs no script.
func livePreview(t *testing.T, b *browser, axe, admin string) {
	b.run(t, "type Markdown", chromedp.Navigate(admin+"/documents/new?type=MARKDOWN"), chromedp.WaitVisible(chromedp.ID("content")),
		runJS(`window.violations = []; document.addEventListener("securitypolicyviolation",
			e => violations.push(e.violatedDirective + " " + e.blockedURI));
			window.previewedText = null; document.addEventListener("console:previewed", e => { previewedText = e.detail })`),
		chromedp.SendKeys(chromedp.ID("content"), unsafeMarkdown), waitFor(`previewedText === document.getElementById("content").value`))
	if v := get(t, b, "violations", chromedp.Evaluate[[]string](`violations`)); len(v) != 0 {
		t.Errorf("the page's CSP blocked %v", v)
	}
	doc := get(t, b, "preview", chromedp.Evaluate[string](`document.getElementById("preview").srcdoc`))
	wantSafePreview(t, doc)
	if sb := get(t, b, "sandbox", chromedp.Evaluate[string](`document.getElementById("preview").getAttribute("sandbox")`)); sb != "" {
		t.Errorf("the preview frame's sandbox is %q, want empty (no script, no same origin)", sb)
	}
	b.accessible(t, axe, "edit MARKDOWN with a preview")
	previewRefused(t, b)
}

// previewRefused: a gateway's 502 problem (not the console's JSON) is said
// in words and leaves the last preview in the frame, never "undefined".
func previewRefused(t *testing.T, b *browser) {
	before := get(t, b, "preview", chromedp.Evaluate[string](`document.getElementById("preview").srcdoc`))
	b.run(t, "a 502 from the gateway", runJS(`window.fetch = () => Promise.resolve(new Response(
			'{"status":502,"code":"bad_gateway"}', {status: 502, headers: {"Content-Type": "application/problem+json"}}));
		window.answered = false; document.addEventListener("console:preview-answered", () => { window.answered = true })`),
		chromedp.SendKeys(chromedp.ID("content"), "more"), waitFor(`window.answered === true`))
	said := get(t, b, "status", chromedp.Text(chromedp.ID("preview-status")))
	if !strings.Contains(said, "not answering") {
		t.Errorf("after a 502 the preview says %q", said)
	}
	if after := get(t, b, "preview", chromedp.Evaluate[string](`document.getElementById("preview").srcdoc`)); after != before {
		t.Errorf("after a 502 the frame holds %q, want the last preview %q", after, before)
	}
}

func wantSafePreview(t *testing.T, doc string) {
	t.Helper()
	if !strings.Contains(doc, "<h1>Aperçu</h1>") || !strings.Contains(doc, "clic") {
		t.Errorf("the preview %q does not show the text rendered", doc)
	}
	for _, bad := range []string{"javascript:", "<script", "href="} {
		if strings.Contains(doc, bad) {
			t.Errorf("the preview %q holds %q", doc, bad)
		}
	}
}

var srcdocAttr = regexp.MustCompile(`srcdoc="([^"]*)"`)

// previewWithoutScript presses Preview as a browser without script does:
// the edit page comes back with the typed text and the preview, and
// nothing is stored.
func previewWithoutScript(t *testing.T, st *Stack, run string) {
	c := consoleClient(t, st, Token)
	title := "Aperçu " + run
	form := url.Values{"type": {"MARKDOWN"}, "title": {title}, "content": {unsafeMarkdown}, "preview": {"1"}, "key": {"k" + run}}
	res := must(c.PostForm(st.AdminURL+"/console/documents/new", form))
	body := readAll(t, res)
	if res.StatusCode != 200 {
		t.Fatalf("Preview: %d, want 200", res.StatusCode)
	}
	if !strings.Contains(body, html.EscapeString(title)) || !strings.Contains(body, ">"+html.EscapeString(unsafeMarkdown)+"</textarea>") {
		t.Errorf("the previewed page lost what was typed:\n%s", body)
	}
	m := srcdocAttr.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no preview frame on the previewed page:\n%s", body)
	}
	wantSafePreview(t, html.UnescapeString(m[1]))
	if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	var all []struct{ Title string }
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &all)
	for _, d := range all {
		if d.Title == title {
			t.Errorf("a preview stored the document %q", title)
		}
	}
}

// runJS runs a script on the page.
func runJS(script string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](script+"; true")(ctx, tg)
		return err
	})
}

// dropFiles drops files (name -> bytes) on the element sel as a person
// dragging them from the desktop would, with a synthetic DataTransfer.
func dropFiles(sel string, files map[string][]byte) chromedp.Action[chromedp.Void] {
	var js strings.Builder
	js.WriteString(`{ const dt = new DataTransfer();`)
	for name, data := range files {
		fmt.Fprintf(&js, `dt.items.add(new File([Uint8Array.from(atob(%q), c => c.charCodeAt(0))], %q));`,
			base64.StdEncoding.EncodeToString(data), name)
	}
	fmt.Fprintf(&js, `document.querySelector(%q).dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true})) }`, sel)
	return runJS(js.String())
}

// mediaDragAndDrop drops a new image and a file already in the library on
// the media page and sends them with the script's upload: the progress
// bar reaches 100 %, the new one is stored, the other recognised.
func mediaDragAndDrop(t *testing.T, b *browser, st *Stack, axe, admin, run string) {
	fresh, again := "glissé-"+run+".png", "encore-"+run+".png"
	b.run(t, "media page", chromedp.Navigate(admin+"/media"), chromedp.WaitVisible(chromedp.ID("dropzone")),
		runJS(`window.progressSeen = []; document.addEventListener("console:upload-progress", e => progressSeen.push(e.detail));
			document.addEventListener("console:uploaded", () => { window.uploaded = true })`),
		dropFiles("#dropzone", map[string][]byte{fresh: unique(pngBytes, "dropped "+run), again: unique(pngBytes, "media page "+run)}),
		waitFor(`document.getElementById("files").files.length === 2`),
		chromedp.Click(chromedp.CSS(`#upload-form button[type=submit]`)), waitFor(`window.uploaded === true`))
	said := get(t, b, "results", chromedp.Text(chromedp.ID("upload-results")))
	if !strings.Contains(said, fresh+" was stored") || !strings.Contains(said, "already in the library") {
		t.Errorf("after dropping a new file and a known one the page says %q", said)
	}
	seen := get(t, b, "progress", chromedp.Evaluate[[]int](`progressSeen`))
	if len(seen) < 2 || seen[len(seen)-1] != 100 {
		t.Errorf("the progress bar went through %v, want 0 … 100", seen)
	}
	if focused := get(t, b, "focus", chromedp.Evaluate[string](`document.activeElement.id`)); focused != "upload-results" {
		t.Errorf("after the upload the focus is on %q, want the results", focused)
	}
	if loc := b.location(t).Path; loc != "/console/media" {
		t.Errorf("after the upload the browser is at %s", loc)
	}
	b.accessible(t, axe, "media (after a drop)")
	uploadRefused(t, b, run)
}

// uploadRefused: an upload the console answers with an error status keeps
// the form and the chosen files, and says why in #upload-status (the
// script's send is pointed at a static path, which takes no POST: 405).
func uploadRefused(t *testing.T, b *browser, run string) {
	b.run(t, "an upload refused", runJS(`const open = XMLHttpRequest.prototype.open;
			XMLHttpRequest.prototype.open = function (m) { return open.call(this, m, "/console/static/nope") };
			window.refused = false; document.addEventListener("console:upload-refused", () => { window.refused = true })`),
		dropFiles("#dropzone", map[string][]byte{"refusé-" + run + ".png": unique(pngBytes, "refused "+run)}),
		dropFiles("#dropzone", map[string][]byte{"joint-" + run + ".png": unique(pngBytes, "joined "+run)}),
		waitFor(`document.getElementById("files").files.length === 2`), // a drop joins the files chosen
		chromedp.Click(chromedp.CSS(`#upload-form button[type=submit]`)), waitFor(`window.refused === true`))
	said := get(t, b, "status", chromedp.Text(chromedp.ID("upload-status")))
	if !strings.Contains(said, "still chosen") || !strings.Contains(said, "(error 405)") {
		t.Errorf("after a refused upload the page says %q", said)
	}
	if n := get(t, b, "files", chromedp.Evaluate[int](`document.getElementById("files").files.length`)); n != 2 {
		t.Errorf("after a refused upload %d files are chosen", n)
	}
}

// revisionsView reads the history of a document edited once (its pins),
// then restores its first version from the console.
func revisionsView(t *testing.T, b *browser, st *Stack, axe, admin, id string) {
	b.run(t, "history", chromedp.Navigate(admin+"/documents/"+id), chromedp.WaitVisible(chromedp.ID("title")),
		chromedp.Click(chromedp.CSS(`a[href="/console/documents/`+id+`/revisions"]`)), chromedp.WaitVisible(chromedp.ID("revision-1")))
	b.accessible(t, axe, "revisions")
	newest := get(t, b, "newest", chromedp.Text(chromedp.CSS(`tbody tr:first-child`)))
	if !strings.Contains(newest, "edited: pinned documents") {
		t.Errorf("the newest revision says %q, want who edited the pins", newest)
	}
	if first := get(t, b, "first", chromedp.Text(chromedp.ID("revision-1"))); !strings.Contains(first, "created") {
		t.Errorf("revision 1 says %q, want created", first)
	}
	b.run(t, "version 1", chromedp.Click(chromedp.CSS(`#revision-1 a`)), chromedp.WaitVisible(chromedp.CSS(`form[action$="/revisions/1/restore"]`)))
	b.accessible(t, axe, "revision")
	b.run(t, "restore version 1", submitted(chromedp.Click(chromedp.CSS(`form[action$="/revisions/1/restore"] button`)), "earlier version was restored"))
	var d struct{ RelatedIds []string }
	st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
	if len(d.RelatedIds) != 0 {
		t.Errorf("after restoring version 1 the document pins %v, want nothing as in version 1", d.RelatedIds)
	}
	staleRestore(t, st, id)
}

var etagField = regexp.MustCompile(`name="etag" value="([^"]+)"`)

// staleRestore: a restore carries the document's version as its page
// showed it; a save since, or the same restore sent twice, is a 412 in
// words and restores nothing.
func staleRestore(t *testing.T, st *Stack, id string) {
	c := consoleClient(t, st, Token)
	restore := func(etag string) (int, string) {
		res := must(c.PostForm(st.AdminURL+"/console/documents/"+id+"/revisions/1/restore", url.Values{"etag": {etag}}))
		return res.StatusCode, readAll(t, res)
	}
	etag := func() string {
		m := etagField.FindStringSubmatch(readAll(t, must(c.Get(st.AdminURL+"/console/documents/"+id+"/revisions/1"))))
		if m == nil {
			t.Fatal("no etag in the restore form")
		}
		return html.UnescapeString(m[1])
	}
	newest := func() int {
		var p struct{ Revisions []struct{ Version int } }
		st.Must("GET", "/bo/documents/"+id+"/revisions?limit=1", nil, 200).JSON(t, &p)
		return p.Revisions[0].Version
	}
	opened := etag()
	st.Must("POST", "/bo/documents/"+id+"/revisions/1/restore", nil, 200) // someone else saves
	before := newest()
	if code, body := restore(opened); code != 412 || !strings.Contains(body, "nothing was restored") {
		t.Errorf("a restore from a page opened before a save: %d %q, want 412 in words", code, body)
	}
	opened = etag()
	if code, _ := restore(opened); code != 303 {
		t.Errorf("a restore: %d, want 303", code)
	}
	if code, _ := restore(opened); code != 412 {
		t.Errorf("the same restore sent twice: %d, want 412", code)
	}
	if n := newest(); n != before+1 {
		t.Errorf("newest version %d after a refused, a done and a repeated restore, want %d", n, before+1)
	}
}

// saveOverTheirs: after a 412 the page shows the version someone else
// saved, and saving again (with its ETag, not the stale one) replaces it.
func saveOverTheirs(t *testing.T, b *browser, st *Stack, linkID string) {
	theirs := get(t, b, "their version", chromedp.Text(chromedp.ID("current")))
	if !strings.Contains(theirs, "Changed in another tab") || !strings.Contains(theirs, "https://example.org/other") {
		t.Errorf("after a 412 their version shows %q", theirs)
	}
	b.run(t, "save mine over theirs", submitted(chromedp.Submit(chromedp.ID("title")), "was saved"))
	var d struct{ Title string }
	st.Must("GET", "/bo/documents/"+linkID+"/detail", nil, 200).JSON(t, &d)
	if d.Title != "Mine" {
		t.Errorf("after saving over their version the title is %q, want Mine", d.Title)
	}
}

// theyChangedTags: someone else changes only the tags of the document
// open in the browser; after the 412, saving mine over theirs keeps their
// tags (the form took them, the page says so) and my title.
func theyChangedTags(t *testing.T, b *browser, st *Stack, admin, linkID, run string) {
	b.run(t, "open the LINK again", chromedp.Navigate(admin+"/documents/"+linkID), chromedp.WaitVisible(chromedp.ID("title")))
	var d struct {
		Title, URL string
		TagsIds    []string
	}
	st.Must("GET", "/bo/documents/"+linkID+"/detail", nil, 200).JSON(t, &d)
	theirs := append([]string{}, d.TagsIds...)
	for _, id := range []string{"flu", "covid", "kids", "adults"} {
		if !slices.Contains(theirs, id+run) {
			theirs = append(theirs, id+run)
			break
		}
	}
	st.Must("PATCH", "/bo/documents/"+linkID, map[string]any{"type": "LINK", "title": d.Title, "url": d.URL, "tagsIds": theirs}, 200)
	b.run(t, "save a new title", chromedp.SetValue(chromedp.ID("title"), "Mine again"), chromedp.Submit(chromedp.ID("title")),
		chromedp.WaitVisible(chromedp.ID("current")))
	if kept := get(t, b, "kept", chromedp.Text(chromedp.ID("kept-theirs"))); !strings.Contains(kept, "Tags") {
		t.Errorf("after a 412 on their tags the page says %q", kept)
	}
	b.run(t, "save mine over theirs", submitted(chromedp.Submit(chromedp.ID("title")), "was saved"))
	st.Must("GET", "/bo/documents/"+linkID+"/detail", nil, 200).JSON(t, &d)
	slices.Sort(theirs)
	if slices.Sort(d.TagsIds); d.Title != "Mine again" || !slices.Equal(d.TagsIds, theirs) {
		t.Errorf("after saving mine over theirs: title %q tags %v, want Mine again and their tags %v", d.Title, d.TagsIds, theirs)
	}
}

// previewIsSafe: the preview changes nothing, so a viewer may ask it and
// an Idempotency-Key keeps no answer (the same key with another text is
// another preview, not a 422 key reuse).
func previewIsSafe(t *testing.T, st *Stack, run string) {
	for i, text := range []string{"# Un", "# Deux"} {
		r := st.Req("POST", "/bo/documents/preview", map[string]string{"type": "MARKDOWN", "content": text},
			"Authorization", "Bearer "+ViewerToken, "Idempotency-Key", "preview-"+run)
		var p struct{ HTML string }
		if r.Status != 200 {
			t.Fatalf("a viewer's preview %d: %d %s, want 200", i+1, r.Status, r.Body)
		}
		if r.JSON(t, &p); !strings.Contains(p.HTML, strings.TrimPrefix(text, "# ")) {
			t.Errorf("preview %d of %q with the same Idempotency-Key: %q", i+1, text, p.HTML)
		}
	}
}

// previewAfterConflict: without script, pressing Preview on the page a 412
// came back with shows their version again (and the preview), so the next
// save is still knowingly over theirs; nothing is saved.
func previewAfterConflict(t *testing.T, st *Stack, id string) {
	c := consoleClient(t, st, Token)
	stale := etagField.FindStringSubmatch(readAll(t, must(c.Get(st.AdminURL+"/console/documents/"+id))))
	if stale == nil {
		t.Fatal("no etag in the edit form")
	}
	var d map[string]any
	st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
	st.Must("PATCH", "/bo/documents/"+id, map[string]any{"type": "HTML", "title": "Theirs", "content": d["content"], "tagsIds": d["tagsIds"]}, 200)
	form := url.Values{"type": {"HTML"}, "title": {"Mine"}, "content": {"<p>mine</p>"}, "etag": {html.UnescapeString(stale[1])}}
	res := must(c.PostForm(st.AdminURL+"/console/documents/"+id, form))
	page := readAll(t, res)
	theirs := etagField.FindStringSubmatch(page)
	if res.StatusCode != 412 || theirs == nil || !strings.Contains(page, `name="conflict"`) {
		t.Fatalf("a save over another's: %d\n%s", res.StatusCode, page)
	}
	form.Set("etag", html.UnescapeString(theirs[1]))
	form.Set("conflict", "1")
	form.Set("preview", "1")
	res = must(c.PostForm(st.AdminURL+"/console/documents/"+id, form))
	page = readAll(t, res)
	if res.StatusCode != 200 || !strings.Contains(page, `id="current"`) || !strings.Contains(page, "Save mine over theirs") ||
		!strings.Contains(page, `srcdoc="`+html.EscapeString("<p>mine</p>")+`"`) {
		t.Errorf("Preview after a 412: %d, their version or the preview lost:\n%s", res.StatusCode, page)
	}
	st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
	if d["title"] != "Theirs" {
		t.Errorf("the preview saved: the title is %v", d["title"])
	}
}
