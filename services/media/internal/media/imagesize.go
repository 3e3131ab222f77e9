package media

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
)

// DecodeConfig reads the size of an image of type mimeType from r as the
// renderer (libvips) will decode it. For most types that is the header's
// size (image.DecodeConfig). A GIF's header only gives its logical screen:
// libvips widens the canvas to hold the first frame, so a GIF declaring a
// 1×1 screen may decode as 11,000×11,000 pixels. Its frames are walked
// (their pixels are skipped, not decoded) and the canvas widened the same
// way (a later frame is clipped to the canvas, but one claiming more than
// MaxImageSide or MaxImagePixels is refused all the same).
func DecodeConfig(r io.Reader, mimeType string) (image.Config, error) {
	if mimeType != "image/gif" {
		cfg, _, err := image.DecodeConfig(r)
		return cfg, err
	}
	return gifConfig(bufio.NewReader(r))
}

// errGIF marks a GIF whose blocks do not make sense.
var errGIF = errors.New("gif: malformed block structure")

func gifConfig(r *bufio.Reader) (image.Config, error) {
	var head [13]byte // signature, logical screen descriptor
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return image.Config{}, err
	}
	if sig := string(head[:6]); sig != "GIF87a" && sig != "GIF89a" {
		return image.Config{}, errors.New("gif: not a GIF file")
	}
	le := binary.LittleEndian
	w, h := int(le.Uint16(head[6:])), int(le.Uint16(head[8:]))
	if err := skipTable(r, head[10]); err != nil {
		return image.Config{}, err
	}
	for frames := 0; ; frames++ {
		ext, err := nextFrame(r)
		if frames > 0 && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
			break // a GIF cut after a frame still shows it
		}
		if err != nil {
			return image.Config{}, err
		}
		if ext == nil { // the trailer
			break
		}
		fw, fh := ext[0], ext[1]
		if frames == 0 {
			w, h = max(w, fw), max(h, fh)
		} else if fw > MaxImageSide || fh > MaxImageSide || fw*fh > MaxImagePixels {
			return image.Config{}, fmt.Errorf("gif: frame %d reaches %d×%d pixels", frames+1, fw, fh)
		}
	}
	return image.Config{Width: w, Height: h}, nil
}

// nextFrame skips extensions up to the next image descriptor and past its
// pixel data, and returns how far the frame reaches (left+width,
// top+height); nil at the trailer.
func nextFrame(r *bufio.Reader) ([]int, error) {
	for {
		b, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		switch b {
		case 0x3B: // trailer
			return nil, nil
		case 0x21: // extension: a label, then sub-blocks
			if _, err := r.ReadByte(); err != nil {
				return nil, unexpected(err)
			}
			if err := skipSubBlocks(r); err != nil {
				return nil, err
			}
		case 0x2C: // image descriptor, local colour table, LZW code size, data
			var d [9]byte
			if _, err := io.ReadFull(r, d[:]); err != nil {
				return nil, unexpected(err)
			}
			le := binary.LittleEndian
			reach := []int{int(le.Uint16(d[0:])) + int(le.Uint16(d[4:])), int(le.Uint16(d[2:])) + int(le.Uint16(d[6:]))}
			if err := skipTable(r, d[8]); err != nil {
				return nil, err
			}
			if _, err := r.ReadByte(); err != nil {
				return nil, unexpected(err)
			}
			if err := skipSubBlocks(r); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, err
			}
			return reach, nil
		default:
			return nil, errGIF
		}
	}
}

// skipTable skips the colour table a packed field announces.
func skipTable(r *bufio.Reader, packed byte) error {
	if packed&0x80 == 0 {
		return nil
	}
	_, err := r.Discard(3 << (packed&0x07 + 1))
	return unexpected(err)
}

func skipSubBlocks(r *bufio.Reader) error {
	for {
		n, err := r.ReadByte()
		if err != nil {
			return unexpected(err)
		}
		if n == 0 {
			return nil
		}
		if _, err := r.Discard(int(n)); err != nil {
			return unexpected(err)
		}
	}
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
