package vipsimage

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// stripWebP removes the EXIF and XMP chunks of a WebP file and their flags
// in VP8X. libvips 8.14's WebP saver writes an EXIF chunk (orientation,
// resolution) even with strip set and the image's metadata removed.
func stripWebP(b []byte) ([]byte, error) {
	if len(b) < 12 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WEBP" {
		return nil, errors.New("not a WebP file")
	}
	out := append([]byte{}, b[:12]...)
	for p := 12; p < len(b); {
		if p+8 > len(b) {
			return nil, errors.New("WebP chunk header cut off")
		}
		size := int(binary.LittleEndian.Uint32(b[p+4:]))
		end := p + 8 + size + size%2 // chunks are padded to an even size
		if end > len(b) {
			return nil, errors.New("WebP chunk cut off")
		}
		switch id := string(b[p : p+4]); id {
		case "EXIF", "XMP ":
		case "VP8X":
			chunk := append([]byte{}, b[p:end]...)
			if len(chunk) > 8 {
				chunk[8] &^= 0x08 | 0x04 // EXIF and XMP present
			}
			out = append(out, chunk...)
		default:
			out = append(out, b[p:end]...)
		}
		p = end
	}
	binary.LittleEndian.PutUint32(out[4:], uint32(len(out)-8))
	if bytes.Equal(out, b) {
		return b, nil
	}
	return out, nil
}
