package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/rendition"
)

// decoded checks r is a 200 image of type ct and returns its size.
func decoded(t *testing.T, r response, ct string) (int, int) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200; body %.300s", r.status, r.body)
	}
	if got := r.header.Get("Content-Type"); got != ct {
		t.Fatalf("Content-Type %q, want %q", got, ct)
	}
	if bytes.Contains(r.body, []byte("Exif")) || bytes.Contains(r.body, []byte("GPSMARK")) {
		t.Errorf("the %s rendition still carries EXIF or the GPS position", ct)
	}
	if ct == "image/avif" {
		if !bytes.Contains(r.body[:min(len(r.body), 32)], []byte("ftypavif")) {
			t.Fatalf("body does not start like an AVIF file: %q", r.body[:min(len(r.body), 32)])
		}
		return 0, 0
	}
	cfg, format, err := image.DecodeConfig(bytes.NewReader(r.body))
	if err != nil || "image/"+format != ct {
		t.Fatalf("body decodes as %q (%v), want %s", format, err, ct)
	}
	return cfg.Width, cfg.Height
}

// TestRenditionFormatsAndSizes decodes each rendition back: its format, its
// size (snapped to the set, never enlarged), and no metadata left.
func TestRenditionFormatsAndSizes(t *testing.T) {
	a, _ := newRenditionAPI(t, rendition.Config{})
	m := a.mustUpload("photo.jpg", photo(1200, 800, 1))
	for _, c := range []struct {
		query, accept, ct string
		w, h              int
		vary              bool
	}{
		{"w=320&format=webp", "", "image/webp", 320, 213, false},
		{"w=300&format=jpeg", "", "image/jpeg", 320, 213, false}, // snapped up to 320
		{"w=160&h=160&fit=cover&format=png", "", "image/png", 160, 160, false},
		{"w=320&h=320&fit=contain&format=png", "", "image/png", 320, 320, false},
		{"w=320&h=320&fit=contain&format=jpeg", "", "image/jpeg", 320, 320, false},
		{"w=320&h=320", "", "image/jpeg", 320, 213, false}, // fit inside, the source's format
		{"h=100&format=webp&q=55", "", "image/webp", 240, 160, false},
		{"w=2000&format=webp", "", "image/webp", 1200, 800, false}, // 1920, never enlarged
		{"preset=thumb", "image/avif,image/webp,*/*", "image/webp", 160, 160, true},
		{"preset=card", "*/*", "image/jpeg", 640, 427, true},
		{"format=auto&w=160", "image/webp;q=0, image/png", "image/jpeg", 160, 107, true},
		{"format=avif&w=160", "", "image/avif", 0, 0, false},
	} {
		t.Run(c.query, func(t *testing.T) {
			r := a.get("/public/medias/"+m.ID+"/download?"+c.query, "Accept", c.accept)
			w, h := decoded(t, r, c.ct)
			if w != c.w || h != c.h {
				t.Errorf("%d×%d, want %d×%d", w, h, c.w, c.h)
			}
			if got := r.header.Get("Vary") == "Accept"; got != c.vary {
				t.Errorf("Vary %q, want Accept: %v", r.header.Get("Vary"), c.vary)
			}
			if cc := r.header.Get("Cache-Control"); cc != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control %q", cc)
			}
		})
	}
}

// TestRenditionOrientation: a photo stored sideways (EXIF orientation 6)
// comes out upright: its left half (red) becomes the top.
func TestRenditionOrientation(t *testing.T) {
	a, _ := newRenditionAPI(t, rendition.Config{})
	m := a.mustUpload("sideways.jpg", photo(400, 200, 6))
	r := a.get("/public/medias/" + m.ID + "/download?w=640&format=png")
	if w, h := decoded(t, r, "image/png"); w != 200 || h != 400 {
		t.Fatalf("%d×%d, want 200×400 (turned upright)", w, h)
	}
	img, err := png.Decode(bytes.NewReader(r.body))
	testkit.Must(t, err, "decode")
	top, bottom := img.At(100, 50), img.At(100, 350)
	if r, _, b, _ := top.RGBA(); r < b {
		t.Errorf("top pixel %v is not red", top)
	}
	if r, _, b, _ := bottom.RGBA(); r > b {
		t.Errorf("bottom pixel %v is not blue", bottom)
	}
}

// TestRenditionStored: made once, then served from storage with its own
// strong ETag, conditional requests and ranges; the record lists the
// presets' URLs.
func TestRenditionStored(t *testing.T) {
	a, im := newRenditionAPI(t, rendition.Config{})
	m := a.mustUpload("photo.jpg", photo(1200, 800, 1))
	path := "/public/medias/" + m.ID + "/download?w=320&format=webp"
	first := a.get(path)
	decoded(t, first, "image/webp")
	etag := first.header.Get("ETag")
	if etag == "" || etag == `"`+m.SHA256+`"` || strings.HasPrefix(etag, "W/") {
		t.Fatalf("ETag %q, want a strong ETag of its own", etag)
	}
	second := a.get(path)
	if second.header.Get("ETag") != etag || !bytes.Equal(second.body, first.body) {
		t.Errorf("second answer differs: ETag %q, %d bytes", second.header.Get("ETag"), len(second.body))
	}
	if n := im.calls.Load(); n != 1 {
		t.Errorf("made %d times, want once", n)
	}
	if r := a.get(path, "If-None-Match", etag); r.status != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", r.status)
	}
	r := a.get(path, "Range", "bytes=0-9")
	if r.status != http.StatusPartialContent || len(r.body) != 10 ||
		r.header.Get("Content-Range") != fmt.Sprintf("bytes 0-9/%d", len(first.body)) {
		t.Errorf("Range: status %d, %d bytes, Content-Range %q", r.status, len(r.body), r.header.Get("Content-Range"))
	}
	if !a.hasKey(media.RenditionPrefix(m.SHA256)) {
		t.Errorf("no object under %s", media.RenditionPrefix(m.SHA256))
	}
	var rec struct{ Renditions map[string]string }
	a.get("/public/medias/"+m.ID).json(t, &rec)
	if rec.Renditions["thumb"] != "/public/medias/"+m.ID+"/download?preset=thumb" || len(rec.Renditions) != 3 {
		t.Errorf("renditions %v, want the URLs of thumb, card and full", rec.Renditions)
	}
}

func (a *api) hasKey(prefix string) bool {
	keys, err := a.blobs.Keys(context.Background())
	testkit.Must(a.t, err, "list objects")
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// TestRenditionBadParameters: each wrong parameter is a 422 naming it,
// all of them at once.
func TestRenditionBadParameters(t *testing.T) {
	a, im := newRenditionAPI(t, rendition.Config{})
	m := a.mustUpload("photo.jpg", photo(64, 48, 1))
	for _, c := range []struct {
		query  string
		fields []string
	}{
		{"w=0", []string{"w"}},
		{"w=-1", []string{"w"}},
		{"w=99999", []string{"w"}},
		{"w=abc&h=1.5", []string{"w", "h"}},
		{"format=bmp", []string{"format"}},
		{"fit=stretch&q=0", []string{"fit", "q"}},
		{"preset=huge", []string{"preset"}},
		{"preset=thumb&w=10", []string{"w"}},
	} {
		r := a.get("/public/medias/" + m.ID + "/download?" + c.query)
		p := r.problem(t, http.StatusUnprocessableEntity, "validation_failed")
		var got []string
		for _, e := range p.Errors {
			got = append(got, e.Field)
		}
		if strings.Join(got, ",") != strings.Join(c.fields, ",") {
			t.Errorf("%s: fields %v, want %v", c.query, got, c.fields)
		}
	}
	if n := im.calls.Load(); n != 0 {
		t.Errorf("%d renditions made for bad parameters", n)
	}
}

// TestRenditionNonImage: a PDF ignores the parameters, even wrong ones.
func TestRenditionNonImage(t *testing.T) {
	a, _ := newRenditionAPI(t, rendition.Config{})
	pdf := sample(pdfHead, 5000, 7)
	m := a.mustUpload("doc.pdf", pdf)
	r := a.get("/public/medias/" + m.ID + "/download?w=-1&format=bmp")
	if r.status != http.StatusOK || !bytes.Equal(r.body, pdf) || r.header.Get("Content-Type") != "application/pdf" {
		t.Errorf("status %d, %d bytes, %s: want the original PDF", r.status, len(r.body), r.header.Get("Content-Type"))
	}
}

// TestRenditionBadImages: a decompression bomb is refused from its header
// (at upload, and for a stored one before any decoding), a truncated JPEG
// is a 422, and a GIF of 10,000 frames never make a 5xx.
func TestRenditionBadImages(t *testing.T) {
	a, _ := newRenditionAPI(t, rendition.Config{})
	bomb := pngClaiming(50_000, 50_000)
	a.upload(part{"file", "bomb.png", "image/png", bomb}).problem(t, http.StatusUnprocessableEntity, "validation_failed")

	// One stored before uploads checked headers: put by hand.
	ctx := context.Background()
	key := "media/bomb"
	testkit.Must(t, a.blobs.Put(ctx, key, "image/png", bytes.NewReader(bomb)), "put bomb")
	old := media.Media{ID: media.NewID(), Name: "bomb.png", MimeType: "image/png", Size: int64(len(bomb)),
		ObjectKey: key, SHA256: sum(bomb), CreatedAt: time.Now(), UpdatedAt: time.Now()}
	testkit.Must(t, a.store.Insert(ctx, old), "insert bomb record")
	within(t, 2*time.Second, "refusing the bomb", func() {
		a.get("/public/medias/"+old.ID+"/download?w=320").problem(t, http.StatusUnprocessableEntity, "image_not_renderable")
	})

	full := photo(1200, 800, 1)
	cut := a.mustUpload("cut.jpg", full[:len(full)/2])
	a.get("/public/medias/"+cut.ID+"/download?w=320&format=png").problem(t, http.StatusUnprocessableEntity, "image_not_renderable")

	frames := a.mustUpload("frames.gif", manyFrames(10_000))
	within(t, 30*time.Second, "a rendition of a GIF of 10,000 frames", func() {
		if w, h := decoded(t, a.get("/public/medias/"+frames.ID+"/download?w=160"), "image/png"); w != 2 || h != 2 {
			t.Errorf("%d×%d, want 2×2 (the first frame, not enlarged)", w, h)
		}
	})
}

// TestRenditionConcurrencyBound: with one slot, a second rendition waits
// Config.Wait, then gets 503 with Retry-After.
func TestRenditionConcurrencyBound(t *testing.T) {
	a, im := newRenditionAPI(t, rendition.Config{Concurrency: 1, Wait: 300 * time.Millisecond})
	im.before = func() { time.Sleep(2 * time.Second) }
	m := a.mustUpload("photo.jpg", photo(400, 300, 1))
	var wg sync.WaitGroup
	statuses := make([]response, 2)
	for i, q := range []string{"w=160", "w=320"} {
		wg.Go(func() {
			statuses[i] = a.get("/public/medias/" + m.ID + "/download?" + q)
		})
		time.Sleep(100 * time.Millisecond) // the first takes the slot
	}
	wg.Wait()
	if statuses[0].status != http.StatusOK {
		t.Errorf("first: status %d, want 200", statuses[0].status)
	}
	p := statuses[1].problem(t, http.StatusServiceUnavailable, "unavailable")
	if statuses[1].header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After: %+v", p)
	}
}

// TestRenditionStampede: many requests for one new rendition make it once.
func TestRenditionStampede(t *testing.T) {
	a, im := newRenditionAPI(t, rendition.Config{})
	im.before = func() { time.Sleep(300 * time.Millisecond) }
	m := a.mustUpload("photo.jpg", photo(800, 600, 1))
	var wg sync.WaitGroup
	rs := make([]response, 20)
	for i := range rs {
		wg.Go(func() { rs[i] = a.get("/public/medias/" + m.ID + "/download?preset=card&format=webp") })
	}
	wg.Wait()
	for i, r := range rs {
		if r.status != http.StatusOK || r.header.Get("ETag") != rs[0].header.Get("ETag") {
			t.Errorf("request %d: status %d, ETag %q", i, r.status, r.header.Get("ETag"))
		}
	}
	if n := im.calls.Load(); n != 1 {
		t.Errorf("made %d times, want once", n)
	}
}

// TestRenditionDeletion: deleting a media deletes its renditions; one
// asked while its media is being deleted is 404 and not left stored.
func TestRenditionDeletion(t *testing.T) {
	a, im := newRenditionAPI(t, rendition.Config{})
	m := a.mustUpload("photo.jpg", photo(400, 300, 1))
	decoded(t, a.get("/public/medias/"+m.ID+"/download?w=160&format=webp"), "image/webp")
	decoded(t, a.get("/public/medias/"+m.ID+"/download?preset=thumb"), "image/jpeg")
	a.must(http.MethodDelete, "/bo/medias/"+m.ID, http.StatusNoContent)
	if a.hasKey(media.RenditionPrefix(m.SHA256)) {
		t.Errorf("renditions left after the deletion")
	}
	a.get("/public/medias/"+m.ID+"/download?w=160").problem(t, http.StatusNotFound, "not_found")

	other := a.mustUpload("other.jpg", photo(300, 300, 1))
	var once sync.Once
	im.before = func() {
		once.Do(func() { testkit.Must(t, a.svc.Delete(context.Background(), other.ID), "delete meanwhile") })
	}
	a.get("/public/medias/"+other.ID+"/download?w=160").problem(t, http.StatusNotFound, "not_found")
	if a.hasKey(media.RenditionPrefix(other.SHA256)) {
		t.Errorf("a rendition made while its media was deleted stayed stored")
	}
}

// TestRenditionStorageDown: MinIO stops while a rendition is made: it is
// served unstored; with MinIO still down the next is a quick 503.
func TestRenditionStorageDown(t *testing.T) {
	t.Parallel()
	s3 := testkit.OwnMinIO(t)
	a, im := newAPIOn(t, media.Config{}, s3.Creds).withRenditions(rendition.Config{})
	m := a.mustUpload("photo.jpg", photo(400, 300, 1))
	im.before = s3.Stop
	within(t, 15*time.Second, "a rendition with the storage stopped meanwhile", func() {
		decoded(t, a.get("/public/medias/"+m.ID+"/download?w=160&format=webp"), "image/webp")
	})
	within(t, 15*time.Second, "a rendition with the storage down", func() {
		r := a.get("/public/medias/" + m.ID + "/download?w=320&format=webp")
		r.problem(t, http.StatusServiceUnavailable, "unavailable")
	})
}
