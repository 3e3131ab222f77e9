package rendition

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/doclib/services/media/internal/media"
)

// PDFReader reads PDF files on disk (package pdf does, each run in a
// sandbox). Its errors that mean the PDF cannot be read have a method
// NotRenderable() string giving the reason.
type PDFReader interface {
	PageSize(ctx context.Context, path string) (w, h float64, err error)
	// Cover draws the first page as a PNG of exactly w×h pixels.
	Cover(ctx context.Context, path string, w, h int) ([]byte, error)
	Text(ctx context.Context, path string) ([]byte, error)
}

// maxCoverPixels bounds the page drawn for a cover, whatever its shape (a
// page of 1×14,400 points asked to cover 160×160 would otherwise be drawn
// 160×2,304,000).
const maxCoverPixels = DefaultMaxSide * DefaultMaxSide

// textObject is the name of a PDF's text under its renditions' prefix.
const textObject = "text.txt.gz"

// WithPDF makes the service render the first page of PDFs and extract
// their text with r.
func (s *Service) WithPDF(r PDFReader) *Service {
	s.pdf = r
	return s
}

// coverPixels is the size the first page (pw×ph points) is drawn at for
// spec: the smallest the rendition can be cut from without enlarging.
func coverPixels(pw, ph float64, s Spec) (int, int) {
	sw, sh := float64(s.W)/pw, float64(s.H)/ph
	var scale float64
	switch {
	case s.W == 0:
		scale = sh
	case s.H == 0:
		scale = sw
	case s.Fit == FitCover:
		scale = max(sw, sh)
	default:
		scale = min(sw, sh)
	}
	w, h := math.Round(pw*scale), math.Round(ph*scale)
	if w*h > maxCoverPixels {
		f := math.Sqrt(maxCoverPixels / (w * h))
		w, h = math.Floor(w*f), math.Floor(h*f)
	}
	return max(int(w), 1), max(int(h), 1)
}

// pdfCover draws the first page of the PDF m at the size spec needs, as a
// PNG the Imager then cuts, pads and encodes as for an image.
func (s *Service) pdfCover(ctx context.Context, m media.Media, spec Spec) ([]byte, error) {
	path, done, err := s.spool(ctx, m)
	if err != nil {
		return nil, err
	}
	defer done()
	pw, ph := m.PageWidth, m.PageHeight
	if pw <= 0 || ph <= 0 { // stored before pages were read
		if pw, ph, err = s.pdf.PageSize(ctx, path); err != nil {
			return nil, unreadable(err)
		}
	}
	w, h := coverPixels(pw, ph, spec)
	png, err := s.pdf.Cover(ctx, path, w, h)
	return png, unreadable(err)
}

// unreadable turns a PDFReader's "cannot read this PDF" into a
// NotRenderableError; other errors pass.
func unreadable(err error) error {
	var u interface{ NotRenderable() string }
	if errors.As(err, &u) {
		return &NotRenderableError{Reason: u.NotRenderable()}
	}
	return err
}

// spool copies the original of m to a temporary file for the PDF tools;
// done removes it.
func (s *Service) spool(ctx context.Context, m media.Media) (string, func(), error) {
	obj, err := s.blobs.Open(ctx, m.ObjectKey)
	if err != nil {
		return "", nil, err
	}
	defer obj.Close()
	f, err := os.CreateTemp("", "media-rendition-*.pdf")
	if err != nil {
		return "", nil, fmt.Errorf("temporary file for a PDF: %w", err)
	}
	done := func() { _ = f.Close(); _ = os.Remove(f.Name()) }
	if _, err := io.Copy(f, obj); err != nil {
		done()
		return "", nil, err
	}
	return f.Name(), done, nil
}

// Text is the text of a PDF media, extracted once and stored.
type Text struct {
	Body   []byte // UTF-8, pages separated by a form feed
	SHA256 string // of Body
}

// ErrNoText is asked of a media that is not a PDF (or while PDFs are not
// read: no PDFReader).
var ErrNoText = errors.New("only PDF media have a text")

// Text returns the text of the PDF m: the stored one, or one extracted now
// (in a rendition slot, once however many ask together) and stored.
func (s *Service) Text(ctx context.Context, m media.Media) (Text, error) {
	if s.pdf == nil || m.MimeType != media.PDFType {
		return Text{}, ErrNoText
	}
	key := media.RenditionPrefix(m.SHA256) + textObject
	if nr, ok := s.failed.get(key); ok {
		return Text{}, nr
	}
	if t, err := s.storedText(ctx, key); err == nil || !errors.Is(err, media.ErrNotFound) {
		return t, err
	}
	ch := s.group.DoChan(key, func() (any, error) {
		t, err := s.extract(context.WithoutCancel(ctx), m, key)
		s.failed.record(key, err)
		return t, err
	})
	select {
	case <-ctx.Done():
		return Text{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return Text{}, r.Err
		}
		return r.Val.(Text), nil
	}
}

func (s *Service) storedText(ctx context.Context, key string) (Text, error) {
	obj, info, err := s.blobs.OpenInfo(ctx, key)
	if err != nil {
		return Text{}, err
	}
	defer obj.Close()
	if info.Meta["sha256"] == "" { // not written whole: extract again
		return Text{}, media.ErrNotFound
	}
	zr, err := gzip.NewReader(obj)
	if err != nil {
		return Text{}, fmt.Errorf("stored text %s: %w", key, err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		return Text{}, fmt.Errorf("stored text %s: %w", key, err)
	}
	return Text{Body: body, SHA256: info.Meta["sha256"]}, nil
}

// extract reads the text of m in a slot and stores it gzip-compressed.
func (s *Service) extract(ctx context.Context, m media.Media, key string) (Text, error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return Text{}, err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, makeTimeout)
	defer cancel()
	path, done, err := s.spool(ctx, m)
	if err != nil {
		return Text{}, err
	}
	body, err := s.pdf.Text(ctx, path)
	done()
	if err != nil {
		return Text{}, unreadable(err)
	}
	sum := sha256.Sum256(body)
	t := Text{Body: body, SHA256: hex.EncodeToString(sum[:])}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	_, _ = zw.Write(body)
	_ = zw.Close()
	if err := s.blobs.PutBytes(ctx, key, "application/gzip", gz.Bytes(), map[string]string{"sha256": t.SHA256}); err != nil {
		s.log.WarnContext(ctx, "could not store a PDF's text; it is served unstored", "media_id", m.ID, "error", err)
		return t, nil
	}
	return t, s.goneMeanwhile(ctx, m, key)
}

// goneMeanwhile removes what was just stored under key for m if m was
// deleted meanwhile, and then says so (media.ErrNotFound).
func (s *Service) goneMeanwhile(ctx context.Context, m media.Media, key string) error {
	if _, err := s.records.Get(ctx, m.ID); !errors.Is(err, media.ErrNotFound) {
		return nil
	}
	if err := s.blobs.Remove(ctx, key); err != nil {
		s.log.WarnContext(ctx, "could not remove the rendition of a media deleted meanwhile", "key", key, "error", err)
	}
	return media.ErrNotFound
}
