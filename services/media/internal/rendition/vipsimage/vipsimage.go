// Package vipsimage renders images with libvips (through govips, cgo): a
// shrink-on-load thumbnail that applies the EXIF orientation, then an
// export that keeps no metadata. See the media README for why libvips.
package vipsimage

import (
	"bytes"
	"fmt"
	"log/slog"
	"sync"

	"github.com/davidbyttow/govips/v2/vips"

	"github.com/doclib/services/media/internal/rendition"
)

// unbounded is the side given to libvips for a side the spec leaves open.
const unbounded = 100_000

var startOnce sync.Once

// Imager implements rendition.Imager.
type Imager struct{}

// New starts libvips once per process: one worker thread per operation
// (the service bounds how many run at once) and no operation cache (every
// rendition is made once, then read from storage). libvips' messages go to
// log at warning level and above.
func New(log *slog.Logger) Imager {
	startOnce.Do(func() {
		vips.LoggingSettings(func(domain string, level vips.LogLevel, msg string) {
			log.Warn("libvips", "domain", domain, "message", msg)
		}, vips.LogLevelWarning)
		vips.Startup(&vips.Config{ConcurrencyLevel: 1, MaxCacheMem: 0, MaxCacheSize: 0, MaxCacheFiles: 0})
	})
	return Imager{}
}

// Render implements rendition.Imager. vips_thumbnail decodes only what the
// size needs (JPEG and WebP shrink on load), only a GIF's first frame, and
// turns the image upright by its EXIF orientation; it never enlarges.
func (Imager) Render(src []byte, s rendition.Spec) ([]byte, error) {
	w, h := side(s.W), side(s.H)
	crop := vips.InterestingNone
	if s.Fit == rendition.FitCover {
		crop = vips.InterestingCentre
	}
	// fail=true: a truncated or corrupt image is an error, not a picture
	// with its missing part grey (libvips' default is to carry on). Not
	// for GIF, whose loader also fails on mere warnings (over 4,096
	// frames), where a browser shows the first frame.
	load := &vips.ImportParams{}
	load.FailOnError.Set(!bytes.HasPrefix(src, []byte("GIF8")))
	img, err := vips.LoadThumbnailFromBuffer(src, w, h, crop, vips.SizeDown, load)
	if err != nil {
		return nil, errUndecodable
	}
	defer img.Close()
	if s.Fit == rendition.FitContain && (img.Width() < s.W || img.Height() < s.H) {
		if err := pad(img, s); err != nil {
			return nil, err
		}
	}
	// Besides the savers' strip, the metadata fields are removed from the
	// image itself (and WebP's EXIF chunk afterwards: stripWebP).
	if err := img.RemoveMetadata(); err != nil {
		return nil, fmt.Errorf("remove metadata: %w", err)
	}
	// libvips decodes lazily: a broken image shows itself only here.
	out, err := export(img, s)
	if err != nil {
		return nil, errUndecodable
	}
	return out, nil
}

var errUndecodable = &rendition.NotRenderableError{Reason: "the image data cannot be decoded (the file is damaged or cut short)"}

func side(n int) int {
	if n == 0 {
		return unbounded
	}
	return n
}

// pad centres img on s.W×s.H: transparent where the format keeps alpha,
// white otherwise.
func pad(img *vips.ImageRef, s rendition.Spec) error {
	left, top := (s.W-img.Width())/2, (s.H-img.Height())/2
	if s.Format == rendition.JPEG {
		if img.HasAlpha() {
			if err := img.Flatten(&vips.Color{R: 255, G: 255, B: 255}); err != nil {
				return err
			}
		}
		return img.EmbedBackground(left, top, s.W, s.H, &vips.Color{R: 255, G: 255, B: 255})
	}
	if !img.HasAlpha() {
		if err := img.AddAlpha(); err != nil {
			return err
		}
	}
	return img.EmbedBackgroundRGBA(left, top, s.W, s.H, &vips.ColorRGBA{})
}

// export encodes img as s.Format with metadata stripped (EXIF, GPS, XMP,
// ICC: the pixels are converted to sRGB by the thumbnail).
func export(img *vips.ImageRef, s rendition.Spec) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch s.Format {
	case rendition.JPEG:
		if img.HasAlpha() {
			if err := img.Flatten(&vips.Color{R: 255, G: 255, B: 255}); err != nil {
				return nil, err
			}
		}
		p := vips.NewJpegExportParams()
		p.Quality, p.StripMetadata, p.Interlace = s.Quality, true, false
		out, _, err = img.ExportJpeg(p)
	case rendition.PNG:
		p := vips.NewPngExportParams()
		p.StripMetadata = true
		out, _, err = img.ExportPng(p)
	case rendition.WebP:
		p := vips.NewWebpExportParams()
		p.Quality, p.StripMetadata = s.Quality, true
		if out, _, err = img.ExportWebp(p); err == nil {
			out, err = stripWebP(out)
		}
	case rendition.AVIF:
		p := vips.NewAvifExportParams()
		p.Quality, p.StripMetadata = s.Quality, true
		out, _, err = img.ExportAvif(p)
	default:
		return nil, fmt.Errorf("unknown format %q", s.Format)
	}
	return out, err
}
