package e2e

import (
	"strings"
	"testing"
	"time"

	"context"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestConsoleEditorialWorkflow takes documents through the editorial
// workflow in the console alone: pending changes edited and published
// without losing the edit, a draft saved, scheduled and published, a
// document unpublished, each state shown as a badge.
func TestConsoleEditorialWorkflow(t *testing.T) {
	st := NewStack(t, map[string][]string{"console": {"CONSOLE_SESSION_KEY=" + strings.Repeat("e2e-session-key-", 3)}})
	b := newBrowser(t)
	b.failShot(t)
	axe := axeSource(t)
	admin := st.AdminURL + "/console"
	b.run(t, "sign in", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), Token), chromedp.Submit(chromedp.ID("token")),
		chromedp.WaitVisible(chromedp.ID("filters")))
	t.Run("pending changes edited in the console are what gets published", func(t *testing.T) {
		pendingEditKept(t, b, st, axe, admin)
	})
	t.Run("a draft saved, scheduled, published and unpublished", func(t *testing.T) {
		draftToPublished(t, b, st, axe, admin)
	})
	t.Run("several documents tagged, published, deleted and restored at once", func(t *testing.T) {
		bulkActions(t, b, st, axe, admin)
	})
	t.Run("keyboard shortcuts and their help page", func(t *testing.T) {
		shortcuts(t, b, st, axe, admin)
	})
	t.Run("attached images shown as pictures", func(t *testing.T) {
		attachedImages(t, b, st, axe, admin)
	})
	t.Run("long values never make a page wider than the screen", func(t *testing.T) {
		longValues(t, b, st, axe, admin)
	})
	t.Run("a restart of the console keeps the session", func(t *testing.T) {
		st.Stop("console")
		st.Start("console")
		b.run(t, "documents after the restart", chromedp.Navigate(admin+"/"), chromedp.WaitVisible(chromedp.ID("filters")))
	})
}

type detail struct {
	Title, Status, PublishAt string
	Version                  int64
	Draft                    *struct{ Title string }
}

func (st *Stack) detail(t *testing.T, id string) detail {
	t.Helper()
	var d detail
	st.Must("GET", "/bo/documents/"+id+"/detail", nil, 200).JSON(t, &d)
	return d
}

// pendingEditKept: a LINK with pending changes made through the API, then
// opened and saved in the console, then published through the API: the
// published title is the console's, not the older pending one.
func pendingEditKept(t *testing.T, b *browser, st *Stack, axe, admin string) {
	var d struct{ ID string }
	st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Records retention schedule",
		"url": "https://example.org/retention"}, 201).JSON(t, &d)
	st.Must("PATCH", "/bo/documents/"+d.ID, map[string]any{"type": "LINK", "title": "Records retention schedule (2026 revision)",
		"url": "https://example.org/retention", "draft": true}, 200)
	b.run(t, "open the document", chromedp.Navigate(admin+"/documents/"+d.ID), chromedp.WaitVisible(chromedp.ID("title")))
	if title := get(t, b, "title", chromedp.Value(chromedp.ID("title"))); title != "Records retention schedule (2026 revision)" {
		t.Errorf("the form opens on %q, want the pending changes", title)
	}
	if text := get(t, b, "page", chromedp.Text(chromedp.CSS("main"))); !strings.Contains(text, "Pending changes") {
		t.Errorf("the page does not say the document has pending changes: %q", text)
	}
	b.accessible(t, axe, "edit with pending changes")
	b.run(t, "save", chromedp.SetValue(chromedp.ID("title"), "Records retention schedule (2026 revision, approved)"),
		submitted(chromedp.Submit(chromedp.ID("title")), "saved"))
	st.Must("POST", "/bo/documents/"+d.ID+"/publish", nil, 200)
	if got := st.detail(t, d.ID); got.Title != "Records retention schedule (2026 revision, approved)" {
		t.Errorf("after publishing, the title is %q: the console's edit was lost", got.Title)
	}
	// Edited again and published from the console: one click.
	st.Must("PATCH", "/bo/documents/"+d.ID, map[string]any{"type": "LINK", "title": "Retention schedule (draft)",
		"url": "https://example.org/retention", "draft": true}, 200)
	// The history marks the published version (4: create, pending,
	// console's save, publish) live, not the newer pending changes (5).
	b.run(t, "history", chromedp.Navigate(admin+"/documents/"+d.ID+"/revisions"), chromedp.WaitVisible(chromedp.CSS("table.revisions")))
	if live := get(t, b, "live rows", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("tr:has(.badge.published)")).map(r => r.id)`)); len(live) != 1 || live[0] != "revision-4" {
		t.Errorf("the history marks %v live, want [revision-4]", live)
	}
	b.accessible(t, axe, "history")
	b.run(t, "publish from the console", chromedp.Navigate(admin+"/documents/"+d.ID), chromedp.WaitVisible(chromedp.ID("title")),
		chromedp.SetValue(chromedp.ID("title"), "Retention schedule"),
		submitted(chromedp.Click(chromedp.CSS(`button[value="publish"]`)), "published"))
	if got := st.detail(t, d.ID); got.Title != "Retention schedule" || got.Draft != nil {
		t.Errorf("after Publish in the console: title %q, pending %v", got.Title, got.Draft)
	}
}

// draftToPublished: a new draft, scheduled for tomorrow in the editor's
// time zone, then published at once, then unpublished.
func draftToPublished(t *testing.T, b *browser, st *Stack, axe, admin string) {
	b.run(t, "new draft", chromedp.Navigate(admin+"/documents/new?type=LINK"), chromedp.WaitVisible(chromedp.ID("title")),
		chromedp.SendKeys(chromedp.ID("title"), "Digitisation guidelines for archives"),
		chromedp.SendKeys(chromedp.ID("url"), "https://example.org/digitisation"),
		submitted(chromedp.Click(chromedp.CSS(`button[value="draft"]`)), "saved as a draft"))
	id := strings.TrimPrefix(b.location(t).Path, "/console/documents/")
	if got := st.detail(t, id); got.Status != "draft" {
		t.Fatalf("a draft saved in the console has status %q", got.Status)
	}
	b.accessible(t, axe, "edit a draft")
	// The editor is in Paris: the time typed is Paris time, stored in UTC.
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	when := time.Now().Add(24 * time.Hour).In(paris).Truncate(time.Minute)
	local := when.Format("2006-01-02T15:04")
	b.run(t, "schedule", inZone("Europe/Paris"), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("publishAt")),
		chromedp.SetValue(chromedp.ID("publishAt"), local),
		submitted(chromedp.Click(chromedp.CSS(`button[value="schedule"]`)), "scheduled"))
	got := st.detail(t, id)
	if got.Status != "draft" || !strings.HasPrefix(got.PublishAt, when.UTC().Format("2006-01-02T15:04")) {
		t.Errorf("after scheduling for %s (Paris time): status %q, publishAt %q", local, got.Status, got.PublishAt)
	}
	badge := get(t, b, "badge", chromedp.Text(chromedp.CSS(".badges")))
	if !strings.Contains(badge, "Scheduled") {
		t.Errorf("the page's badges say %q, want Scheduled", badge)
	}
	b.run(t, "publish now", submitted(chromedp.Click(chromedp.CSS(`button[value="publish"]`)), "published"))
	if got := st.detail(t, id); got.Status != "published" || got.PublishAt != "" {
		t.Errorf("after Publish: status %q, publishAt %q", got.Status, got.PublishAt)
	}
	b.run(t, "unpublish", submitted(chromedp.Click(chromedp.CSS(`form[action$="/unpublish"] button`)), "unpublished"))
	if got := st.detail(t, id); got.Status != "draft" {
		t.Errorf("after Unpublish: status %q", got.Status)
	}
	b.run(t, "list", chromedp.Navigate(admin+"/?q=digitisation"), chromedp.WaitVisible(chromedp.ID("filters")))
	if row := get(t, b, "row", chromedp.Text(chromedp.CSS(`#rows tr:not([hidden])`))); !strings.Contains(row, "Draft") {
		t.Errorf("the list row says %q, want a Draft badge", row)
	}
}

// inZone makes the browser's time zone zone, as an editor's there is.
func inZone(zone string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone})
		return err
	})
}

// longValues: a 300-character title with bidi characters, a 255-character
// media name, long category and tag names and a hundred tags on one
// document: every page fits 360 px and 1440 px without scrolling sideways,
// in the light and the dark theme, with no serious accessibility finding.
func longValues(t *testing.T, b *browser, st *Stack, axe, admin string) {
	long := strings.Repeat("Conservation", 25)[:255]
	media := st.Upload(long[:251]+".png", unique(pngBytes, "long"))
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": "longcat", "name": strings.Repeat("Catégorie", 11)}, 201)
	var tags []string
	for i := range 100 {
		id := "longtag" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		// Retried with the same key: on a loaded machine a write may answer 503 outcome_unknown.
		body := map[string]string{"id": id, "name": strings.Repeat("Étiquette", 5) + id, "categoryId": "longcat"}
		for try := 0; ; try++ {
			r := st.BO("POST", "/bo/tags", body, "Idempotency-Key", "long-"+id)
			if r.Status == 201 || r.Status == 200 {
				break
			}
			if r.Status != 503 || try == 4 {
				t.Fatalf("POST /bo/tags: %d %s", r.Status, r.Body)
			}
			time.Sleep(500 * time.Millisecond)
		}
		tags = append(tags, id)
	}
	title := "עברית عنوان طويل جدا " + strings.Repeat("Longtitlewithoutanyspace", 12)[:270]
	var d struct{ ID string }
	st.Must("POST", "/bo/documents", map[string]any{"type": "MARKDOWN", "title": title, "content": "# Titre\n\n" + long,
		"imagesIds": []string{media}, "tagsIds": tags}, 201).JSON(t, &d)
	pages := []string{"/", "/documents/" + d.ID, "/documents/" + d.ID + "/revisions", "/media", "/tags", "/documents/new?type=MARKDOWN",
		"/documents/" + d.ID + "/delete", "/help"}
	for _, theme := range []string{"light", "dark"} {
		b.run(t, theme, emulateTheme(theme))
		for _, w := range [][2]int64{{360, 800}, {1440, 1000}} {
			b.run(t, "viewport", chromedp.EmulateViewport(w[0], w[1]))
			for _, page := range pages {
				b.run(t, page, chromedp.Navigate(admin+page), chromedp.WaitVisible(chromedp.ID("main")))
				if wide := get(t, b, page+" width", chromedp.Evaluate[int64](`document.documentElement.scrollWidth`)); wide > w[0]+1 {
					t.Errorf("%s at %d px (%s) is %d px wide (screenshot: %s)", page, w[0], theme, wide, b.screenshot(t))
				}
				if page == "/" && w[0] == 360 {
					if top := get(t, b, "first row", chromedp.Evaluate[float64](`document.querySelector("#rows tr:not([hidden])").getBoundingClientRect().top`)); top > 800 {
						t.Errorf("at 360x800 the first document is %.0f px down: not on the first screen (screenshot: %s)", top, b.screenshot(t))
					}
				}
				if w[0] == 1440 {
					b.accessible(t, axe, page+" ("+theme+")")
				}
			}
		}
	}
	b.run(t, "back", chromedp.EmulateViewport(1440, 1000), emulateTheme("light"))
}

// emulateTheme makes the page see the system's light or dark setting.
func emulateTheme(theme string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}}})
		return err
	})
}
