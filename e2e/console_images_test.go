package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// picture is a w×h PNG that decodes (renditions can be made of it).
func picture(w, h int, seed uint8) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		for y := range h {
			img.Set(x, y, color.RGBA{uint8(x * 255 / w), uint8(y * 255 / h), seed, 255})
		}
	}
	var buf bytes.Buffer
	_ = png.Encode(&buf, img)
	return buf.Bytes()
}

// attachedImages: an image attached to a Markdown text and referred to by
// the address the edit page gives shows as a picture in the preview, as
// the app shows it; the edit page and the media page show thumbnails.
func attachedImages(t *testing.T, b *browser, st *Stack, axe, admin string) {
	id := st.Upload("Herbarium map.png", picture(64, 48, 7))
	code := "![Herbarium map](/public/medias/" + id + "/download?preset=card)"
	var d struct{ ID string }
	st.Must("POST", "/bo/documents", map[string]any{"type": "MARKDOWN", "title": "Herbarium map", "content": "# Map\n\n" + code,
		"imagesIds": []string{id}}, 201).JSON(t, &d)
	b.run(t, "edit", chromedp.Navigate(admin+"/documents/"+d.ID), chromedp.WaitVisible(chromedp.ID("content")))
	if said := get(t, b, "code", chromedp.Text(chromedp.CSS(".attached .image-code"))); said != code {
		t.Errorf("the edit page says to refer to the image as %q, want %q", said, code)
	}
	b.run(t, "thumbnails load", waitFor(`Array.from(document.querySelectorAll(".attached img")).every(i => i.complete && i.naturalWidth > 0)`))
	b.inPreview(t, `(() => { const i = document.querySelector("img"); return !!i && i.complete && i.naturalWidth > 0 })()`)
	b.accessible(t, axe, "edit with an attached image")
	b.run(t, "media grid", chromedp.Navigate(admin+"/media"), chromedp.WaitVisible(chromedp.ID("media-"+id)),
		waitFor(`(i => i.complete && i.naturalWidth > 0)(document.querySelector("#media-`+id+` img"))`))
}

// inPreview waits until expr is true in the preview frame. The frame is
// sandboxed (an opaque origin), so Chromium runs it as a target of its
// own, which the test attaches to.
func (b *browser) inPreview(t *testing.T, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	for {
		if ok, err := evalInFrameTarget(ctx, b.ctx, expr); err == nil && ok {
			return
		} else if ctx.Err() != nil {
			t.Fatalf("the preview never made %s true (last error %v; screenshot: %s)", expr, err, b.screenshot(t))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func evalInFrameTarget(ctx, browserCtx context.Context, expr string) (bool, error) {
	targets, err := chromedp.Targets(browserCtx)
	if err != nil {
		return false, err
	}
	for _, tg := range targets {
		if tg.Type != "iframe" {
			continue
		}
		// Not cancelled: that would close the frame, and the page with it;
		// the browser's end ends it.
		fctx, _ := chromedp.NewContext(browserCtx, chromedp.WithTargetID(tg.TargetID)) //nolint:govet // see above
		rctx, stop := context.WithTimeout(fctx, 5*time.Second)
		defer stop()
		go func() { <-ctx.Done(); stop() }()
		return chromedp.Run(rctx, chromedp.Evaluate[bool](expr))
	}
	return false, fmt.Errorf("no frame target among %d", len(targets))
}
