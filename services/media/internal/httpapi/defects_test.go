package httpapi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/rendition"
)

// gifWithFrames returns a GIF of a sw×sh logical screen whose frames are
// the given rectangles (left, top, width, height), each with a few bytes
// of pixel data: the header says sw×sh, the frames may say more.
func gifWithFrames(sw, sh uint16, frames ...[4]uint16) []byte {
	le := binary.LittleEndian
	b := append([]byte("GIF89a"), le.AppendUint16(le.AppendUint16(nil, sw), sh)...)
	b = append(b, 0x80, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff) // a 2-colour global table
	for _, f := range frames {
		b = append(b, 0x2c)
		for _, v := range f {
			b = le.AppendUint16(b, v)
		}
		b = append(b, 0, 2, 2, 0x44, 0x01, 0)
	}
	return append(b, 0x3b)
}

// TestGIFSizeIsTheDecodedOne: a GIF's first frame larger than its logical
// screen makes the canvas libvips decodes; that size is stored, and the
// pixel cap applies to it, at upload and before a stored one is rendered
// (a 35-byte GIF claiming a 1×1 screen decodes as 11,000×11,000).
func TestGIFSizeIsTheDecodedOne(t *testing.T) {
	a, im := newRenditionAPI(t, rendition.Config{})
	bomb := gifWithFrames(1, 1, [4]uint16{0, 0, 11000, 11000})
	p := a.upload(part{"file", "bomb.gif", "image/gif", bomb}).problem(t, http.StatusUnprocessableEntity, "validation_failed")
	if len(p.Errors) != 1 || p.Errors[0].Field != "file" || !strings.Contains(p.Errors[0].Message, "11000×11000") {
		t.Errorf("a GIF whose frame is 11,000×11,000: %+v, want a 422 naming file and that size", p)
	}
	wide := a.mustUpload("wide.gif", gifWithFrames(1, 1, [4]uint16{2, 1, 30, 20}, [4]uint16{0, 0, 5, 5}))
	if wide.Width != 32 || wide.Height != 21 {
		t.Errorf("a 1×1 screen with a first frame reaching 32×21: stored %d×%d, want 32×21", wide.Width, wide.Height)
	}

	ctx := context.Background()
	key := "media/gifbomb"
	testkit.Must(t, a.blobs.Put(ctx, key, "image/gif", bytes.NewReader(bomb)), "put bomb")
	old := media.Media{ID: media.NewID(), Name: "bomb.gif", MimeType: "image/gif", Size: int64(len(bomb)),
		ObjectKey: key, SHA256: sum(bomb), Width: 1, Height: 1, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	testkit.Must(t, a.store.Insert(ctx, old), "insert bomb record")
	for _, q := range []string{"preset=thumb", "w=320&format=webp"} {
		a.get("/public/medias/"+old.ID+"/download?"+q).problem(t, http.StatusUnprocessableEntity, "image_not_renderable")
	}
	if n := im.calls.Load(); n != 0 {
		t.Errorf("%d renditions reached libvips, want none", n)
	}
}

// TestTruncatedJPEGIsNotRendered: a JPEG cut in the middle of its scan is
// stored as it came (the original is the editor's), but no rendition is
// made of it: a clear 422, never a picture with its lower part grey.
func TestTruncatedJPEGIsNotRendered(t *testing.T) {
	a, _ := newRenditionAPI(t, rendition.Config{})
	full := photo(1200, 800, 1)
	cut := a.mustUpload("cut.jpg", full[:len(full)*2/3])
	for _, q := range []string{"w=320&format=webp", "preset=thumb", "w=160&format=png"} {
		a.get("/public/medias/"+cut.ID+"/download?"+q).problem(t, http.StatusUnprocessableEntity, "image_not_renderable")
	}
	if r := a.get("/public/medias/" + cut.ID + "/download"); r.status != http.StatusOK || !bytes.Equal(r.body, full[:len(full)*2/3]) {
		t.Errorf("the original: %d, %d bytes; want 200 with the bytes uploaded", r.status, len(r.body))
	}
}

// TestImportOfAnotherTypeSaysSo: PDF bytes imported under a PNG record are
// a type mismatch, named as such (not a digest mismatch of "0 bytes").
func TestImportOfAnotherTypeSaysSo(t *testing.T) {
	a := newAPI(t, media.Config{})
	pdf := sample(pdfHead, 2000, 3)
	id := media.NewID()
	rec := `{"id":"` + id + `","name":"x.png","mimeType":"image/png","size":2000,"sha256":"` + sum(pdf) +
		`","createdAt":"2026-01-02T03:04:05.000Z","updatedAt":"2026-01-02T03:04:05.000Z"}`
	ct, body := multipartBody(t, part{"record", "", "application/json", []byte(rec)}, part{"file", "x.png", "image/png", pdf})
	req := httptest.NewRequest(http.MethodPut, "/bo/import/medias/"+id, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	p := a.serve(req).problem(t, http.StatusUnprocessableEntity, "type_mismatch")
	if len(p.Errors) != 1 || p.Errors[0].Field != "file" || p.Errors[0].Message != "the file is application/pdf; its record says image/png" {
		t.Errorf("%+v, want one error on file saying both types", p)
	}
	a.assertEmpty()
}
