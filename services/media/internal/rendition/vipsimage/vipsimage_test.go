package vipsimage

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"log/slog"
	"os"
	"testing"

	"github.com/doclib/services/media/internal/rendition"
)

func sidewaysPhoto(w, h int, orientation uint16) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.RGBA{R: 220, G: 20, B: 20, A: 255}
			if x >= w/2 {
				c = color.RGBA{R: 20, G: 20, B: 220, A: 255}
			}
			img.SetRGBA(x, y, c)
		}
	}
	var b bytes.Buffer
	_ = jpeg.Encode(&b, img, nil)
	le := binary.LittleEndian
	t := []byte("Exif\x00\x00II*\x00")
	t = le.AppendUint32(t, 8)
	t = le.AppendUint16(t, 1)
	t = le.AppendUint16(t, 0x0112)
	t = le.AppendUint16(t, 3)
	t = le.AppendUint32(t, 1)
	t = le.AppendUint32(t, uint32(orientation))
	t = le.AppendUint32(t, 0)
	t = append(t, "GPSMARK"...)
	seg := binary.BigEndian.AppendUint16([]byte{0xFF, 0xE1}, uint16(len(t)+2))
	out := append([]byte{0xFF, 0xD8}, seg...)
	out = append(out, t...)
	return append(out, b.Bytes()[2:]...)
}

func TestRenderStripsMetadata(t *testing.T) {
	im := New(slog.Default())
	src := sidewaysPhoto(400, 200, 6)
	for _, f := range []string{rendition.JPEG, rendition.PNG, rendition.WebP} {
		out, err := im.Render(src, rendition.Spec{W: 160, Fit: rendition.FitInside, Format: f, Quality: 80})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if i := bytes.Index(out, []byte("Exif")); i >= 0 {
			_ = os.WriteFile("/tmp/rbench/out."+f, out, 0o644)
			t.Errorf("%s: Exif at %d of %d: %q", f, i, len(out), out[max(0, i-16):min(len(out), i+40)])
		}
	}
}
