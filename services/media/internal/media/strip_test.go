package media

import (
	"bytes"
	"encoding/binary"
	"image"
	"image/jpeg"
	"io"
	"testing"
)

// TestStripJPEG: EXIF with GPS, XMP and comments go, the orientation and
// the image stay, and the result still decodes the same size.
func TestStripJPEG(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, 40, 30)), nil); err != nil {
		t.Fatal(err)
	}
	jpg := b.Bytes()
	exif := append([]byte("Exif\x00\x00"), tiffWithOrientation(6, "GPSMARK")...)
	in := append([]byte{}, jpg[:2]...)
	in = append(in, segment(0xE1, exif)...)
	in = append(in, segment(0xE1, []byte("http://ns.adobe.com/xap/1.0/\x00<x:xmpmeta>XMPMARK</x:xmpmeta>"))...)
	in = append(in, segment(0xFE, []byte("COMMENTMARK"))...)
	in = append(in, jpg[2:]...)

	rc := StripJPEG(bytes.NewReader(in))
	out, err := io.ReadAll(rc)
	_ = rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, mark := range []string{"GPSMARK", "XMPMARK", "COMMENTMARK"} {
		if bytes.Contains(out, []byte(mark)) {
			t.Errorf("%s left in the stripped file", mark)
		}
	}
	if o := exifOrientation(out[2+4+6:]); o != 6 {
		t.Errorf("orientation %d kept, want 6", o)
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(out))
	if err != nil || cfg.Width != 40 || cfg.Height != 30 {
		t.Errorf("stripped file decodes as %dx%d (%v)", cfg.Width, cfg.Height, err)
	}
}

// TestStripJPEGCutOff: a body cut off inside a segment stays an error (an
// upload must never store a truncated file as complete).
func TestStripJPEGCutOff(t *testing.T) {
	t.Parallel()
	in := append([]byte{0xFF, 0xD8}, segment(0xE1, bytes.Repeat([]byte("x"), 1000))[:500]...)
	rc := StripJPEG(io.MultiReader(bytes.NewReader(in), errReader{io.ErrUnexpectedEOF}))
	defer rc.Close()
	if _, err := io.ReadAll(rc); err != io.ErrUnexpectedEOF {
		t.Errorf("error %v, want io.ErrUnexpectedEOF", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func segment(marker byte, body []byte) []byte {
	s := []byte{0xFF, marker}
	s = binary.BigEndian.AppendUint16(s, uint16(len(body)+2))
	return append(s, body...)
}

func tiffWithOrientation(o uint16, extra string) []byte {
	le := binary.LittleEndian
	t := []byte("II*\x00")
	t = le.AppendUint32(t, 8)
	t = le.AppendUint16(t, 1)
	t = le.AppendUint16(t, 0x0112)
	t = le.AppendUint16(t, 3)
	t = le.AppendUint32(t, 1)
	t = le.AppendUint32(t, uint32(o))
	t = le.AppendUint32(t, 0)
	return append(t, extra...)
}
