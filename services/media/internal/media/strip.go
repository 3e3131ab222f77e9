package media

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
)

// StripJPEG returns a reader of the JPEG read from r without its metadata
// segments: EXIF (with the GPS position), XMP, IPTC (APP13) and comments
// are dropped, and an EXIF orientation other than 1 is kept in a minimal
// EXIF segment of its own, so that viewers still turn the photo upright.
// ICC profiles (APP2) and everything from the first scan on pass as they
// are. It streams: one segment (at most 64 KiB) is held at a time. Bytes
// that are not a well-formed JPEG header pass unchanged from where the
// header stops making sense (the upload's own checks judge them).
// The caller must Close the returned reader (it ends a goroutine).
func StripJPEG(r io.Reader) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(stripJPEG(pw, bufio.NewReaderSize(r, segmentMax))) }()
	return pr
}

// segmentMax is the largest JPEG segment: its marker and a 16-bit length.
const segmentMax = 2 + 65535

func stripJPEG(w io.Writer, r *bufio.Reader) error {
	if err := copyN(w, r, 2); err != nil { // SOI
		return err
	}
	for {
		head, err := r.Peek(4)
		if err != nil || head[0] != 0xFF || head[1] == 0xDA || head[1] == 0xD9 || head[1] < 0xC0 {
			break // the scan (or something unexpected): the rest as it is
		}
		n := int(binary.BigEndian.Uint16(head[2:]))
		if n < 2 {
			break
		}
		// Peek returns the reader's own error: a body cut off
		// (io.ErrUnexpectedEOF from multipart) must stay an error.
		seg, err := r.Peek(2 + n)
		if err != nil {
			if _, werr := w.Write(seg); werr != nil { // what there was; the upload's header check judges it
				return werr
			}
			return passEOF(err)
		}
		if err := keep(w, seg); err != nil {
			return err
		}
		_, _ = r.Discard(len(seg))
	}
	_, err := io.Copy(w, r)
	return err
}

// keep writes seg unless it is metadata; an EXIF segment becomes its
// orientation alone.
func keep(w io.Writer, seg []byte) error {
	body := seg[4:]
	switch marker := seg[1]; {
	case marker == 0xE1 && bytes.HasPrefix(body, []byte("Exif\x00\x00")):
		if o := exifOrientation(body[6:]); o > 1 && o <= 8 {
			_, err := w.Write(orientationSegment(o))
			return err
		}
		return nil
	case marker == 0xE1, marker == 0xED, marker == 0xFE: // XMP, IPTC, comment
		return nil
	}
	_, err := w.Write(seg)
	return err
}

// exifOrientation reads tag 0x0112 of IFD0 of a TIFF structure; 0 if none.
func exifOrientation(t []byte) uint16 {
	if len(t) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(t[:2]) {
	case "II":
		bo = binary.LittleEndian
	case "MM":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int(bo.Uint32(t[4:]))
	if off < 8 || off+2 > len(t) {
		return 0
	}
	count := int(bo.Uint16(t[off:]))
	for i := 0; i < count; i++ {
		e := off + 2 + 12*i
		if e+12 > len(t) {
			return 0
		}
		if bo.Uint16(t[e:]) == 0x0112 && bo.Uint16(t[e+2:]) == 3 {
			return bo.Uint16(t[e+8:])
		}
	}
	return 0
}

// orientationSegment is an APP1 EXIF segment holding only Orientation o.
func orientationSegment(o uint16) []byte {
	le := binary.LittleEndian
	t := []byte("Exif\x00\x00II*\x00")
	t = le.AppendUint32(t, 8)
	t = le.AppendUint16(t, 1)
	t = le.AppendUint16(t, 0x0112)
	t = le.AppendUint16(t, 3)
	t = le.AppendUint32(t, 1)
	t = le.AppendUint16(t, o)
	t = append(t, 0, 0)       // the value's padding to 4 bytes
	t = le.AppendUint32(t, 0) // no next IFD
	seg := []byte{0xFF, 0xE1}
	seg = binary.BigEndian.AppendUint16(seg, uint16(len(t)+2))
	return append(seg, t...)
}

func copyN(w io.Writer, r io.Reader, n int64) error {
	_, err := io.CopyN(w, r, n)
	return passEOF(err)
}

// passEOF lets a file that ends early through (the upload's own checks
// judge it, as without stripping); any other error, io.ErrUnexpectedEOF
// included, stays.
func passEOF(err error) error {
	if err == io.EOF { //nolint:errorlint // the reader's own end, not a wrapped one
		return nil
	}
	return err
}
