package httpapi_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/rendition"
	"github.com/doclib/services/media/internal/rendition/vipsimage"
)

// imager is the real libvips imager, counted, with a hook run before each
// rendition (to slow it down or to act while it is being made).
type imager struct {
	vipsimage.Imager
	calls  atomic.Int32
	before func()
}

func (i *imager) Render(src []byte, s rendition.Spec) ([]byte, error) {
	i.calls.Add(1)
	if i.before != nil {
		i.before()
	}
	return i.Imager.Render(src, s)
}

// newRenditionAPI is newAPI with renditions made by the real imager.
func newRenditionAPI(t *testing.T, cfg rendition.Config) (*api, *imager) {
	t.Helper()
	a := newAPI(t, media.Config{})
	return a.withRenditions(cfg)
}

func (a *api) withRenditions(cfg rendition.Config) (*api, *imager) {
	log := slog.New(slog.DiscardHandler)
	im := &imager{Imager: vipsimage.New(log)}
	a.renditions = rendition.NewService(cfg, a.blobs, a.svc, im, log)
	a.h = a.engine(log)
	return a, im
}

// photo returns a w×h JPEG whose left half is red and right half blue,
// with an EXIF segment carrying orientation and a GPS position.
func photo(w, h int, orientation uint16) []byte {
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
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 90}); err != nil {
		panic(err)
	}
	jpg := b.Bytes()
	out := append([]byte{}, jpg[:2]...) // SOI
	out = append(out, exifSegment(orientation)...)
	return append(out, jpg[2:]...)
}

// exifSegment is an APP1 Exif segment (little-endian TIFF) with IFD0 holding
// Orientation and a pointer to a GPS IFD holding GPSLatitudeRef "N" and
// the marker string "GPSMARK" in GPSMapDatum.
func exifSegment(orientation uint16) []byte {
	le := binary.LittleEndian
	t := []byte("II*\x00")
	t = le.AppendUint32(t, 8)
	// IFD0 at 8: 2 entries (2 + 2*12 + 4 = 30 bytes), GPS IFD at 38.
	t = le.AppendUint16(t, 2)
	t = append(t, ifdEntry(0x0112, 3, 1, uint32(orientation))...)
	t = append(t, ifdEntry(0x8825, 4, 1, 38)...)
	t = le.AppendUint32(t, 0)
	// GPS IFD at 38: 2 entries (30 bytes), the datum string at 68.
	t = le.AppendUint16(t, 2)
	t = append(t, ifdEntry(0x0001, 2, 2, uint32('N'))...)
	t = append(t, ifdEntry(0x0012, 2, 8, 68)...)
	t = le.AppendUint32(t, 0)
	t = append(t, "GPSMARK\x00"...)
	body := append([]byte("Exif\x00\x00"), t...)
	seg := []byte{0xFF, 0xE1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(len(body)+2))
	return append(seg, body...)
}

func ifdEntry(tag, typ uint16, count, value uint32) []byte {
	le := binary.LittleEndian
	e := le.AppendUint16(nil, tag)
	e = le.AppendUint16(e, typ)
	e = le.AppendUint32(e, count)
	return le.AppendUint32(e, value)
}

// pngClaiming returns a small valid-looking PNG whose header claims w×h
// pixels (a decompression bomb: its data is a few bytes).
func pngClaiming(w, h uint32) []byte {
	b := []byte("\x89PNG\r\n\x1a\n")
	ihdr := binary.BigEndian.AppendUint32(nil, w)
	ihdr = binary.BigEndian.AppendUint32(ihdr, h)
	ihdr = append(ihdr, 8, 2, 0, 0, 0) // 8-bit RGB
	b = pngChunk(b, "IHDR", ihdr)
	b = pngChunk(b, "IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	return pngChunk(b, "IEND", nil)
}

func pngChunk(b []byte, typ string, data []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
	start := len(b)
	b = append(b, typ...)
	b = append(b, data...)
	return binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b[start:]))
}

// manyFrames returns a 2×2 GIF of n frames.
func manyFrames(n int) []byte {
	g := &gif.GIF{}
	pal := color.Palette{color.Black, color.White}
	for i := 0; i < n; i++ {
		f := image.NewPaletted(image.Rect(0, 0, 2, 2), pal)
		f.SetColorIndex(i%2, 0, 1)
		g.Image = append(g.Image, f)
		g.Delay = append(g.Delay, 1)
	}
	var b bytes.Buffer
	if err := gif.EncodeAll(&b, g); err != nil {
		panic(err)
	}
	return b.Bytes()
}
