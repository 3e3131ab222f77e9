package rendition

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/doclib/services/media/internal/media"
)

// ErrBusy means every rendition slot stayed taken for Config.Wait.
var ErrBusy = errors.New("too many renditions being made")

// NotRenderableError says why an image cannot be rendered (its header
// claims too many pixels, its data cannot be decoded, it is too large).
type NotRenderableError struct{ Reason string }

func (e *NotRenderableError) Error() string { return "image not renderable: " + e.Reason }

// Imager decodes an original and encodes its rendition. It must apply the
// EXIF orientation and keep no metadata.
type Imager interface {
	Render(src []byte, s Spec) ([]byte, error)
}

// Records finds a live media (media.Service does).
type Records interface {
	Get(ctx context.Context, id string) (media.Media, error)
}

// Result is a rendition to serve. The caller closes Body.
type Result struct {
	Body        media.Object
	Size        int64
	ETag        string // quoted, strong
	ModTime     time.Time
	ContentType string
}

// makeTimeout bounds the making of one rendition once it has a slot (the
// original's read, the decoding, the encoding, the store).
const makeTimeout = time.Minute

// Service makes renditions once and serves them stored.
type Service struct {
	cfg     Config
	blobs   media.Blobs
	records Records
	imager  Imager
	log     *slog.Logger
	slots   chan struct{}
	group   singleflight.Group
	now     func() time.Time
	pdf     PDFReader // nil: PDFs get no cover and no text

	textSlots chan struct{} // bounds the texts read and compressed at once
	texts     *textCache
	loads     textLoads
	failed    *failures // what could not be made, answered 422 from memory
}

// NewService returns a Service; cfg's zero fields take their defaults.
func NewService(cfg Config, blobs media.Blobs, records Records, imager Imager, log *slog.Logger) *Service {
	cfg = cfg.WithDefaults()
	s := &Service{cfg: cfg, blobs: blobs, records: records, imager: imager, log: log,
		slots: make(chan struct{}, cfg.Concurrency), now: time.Now,
		textSlots: make(chan struct{}, cfg.Concurrency), texts: newTextCache(cfg.TextCacheBytes)}
	s.failed = newFailures(func() time.Time { return s.now() })
	return s
}

// Config is the service's configuration, defaults applied.
func (s *Service) Config() Config { return s.cfg }

// Renders reports whether images of type mimeType get renditions; other
// media ignore the parameters.
func (s *Service) Renders(mimeType string) bool {
	switch mimeType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	case "image/svg+xml":
		return s.cfg.SVG
	case media.PDFType:
		return s.pdf != nil
	}
	return false
}

// Get returns the rendition spec of m: the stored one, or one made now
// from the original and stored. Requests for the same new rendition
// arriving together make it once (in this process).
func (s *Service) Get(ctx context.Context, m media.Media, spec Spec) (Result, error) {
	key := Key(m.SHA256, spec)
	if nr, ok := s.failed.get(key); ok {
		return Result{}, nr
	}
	obj, info, err := s.blobs.OpenInfo(ctx, key)
	if err == nil && info.Meta["sha256"] != "" {
		return Result{Body: obj, Size: info.Size, ETag: `"` + info.Meta["sha256"] + `"`,
			ModTime: info.ModTime, ContentType: ContentType(spec.Format)}, nil
	}
	if err == nil { // not one this service wrote whole: make it again
		_ = obj.Close()
	} else if !errors.Is(err, media.ErrNotFound) {
		return Result{}, err
	}
	// The leader makes it detached from its own request, so that the
	// others waiting for it do not fail if its client goes away.
	ch := s.group.DoChan(key, func() (any, error) {
		mk, err := s.make(context.WithoutCancel(ctx), m, spec, key)
		s.failed.record(key, err)
		return mk, err
	})
	select {
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return Result{}, r.Err
		}
		mk := r.Val.(made)
		return Result{Body: nopCloser{bytes.NewReader(mk.b)}, Size: int64(len(mk.b)), ETag: `"` + mk.sum + `"`,
			ModTime: mk.at, ContentType: ContentType(spec.Format)}, nil
	}
}

type made struct {
	b   []byte
	sum string
	at  time.Time
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// make renders spec of m in a slot and stores it. A store that fails does
// not fail the request: the rendition is served and made again next time.
// A media deleted meanwhile loses the rendition just stored.
func (s *Service) make(ctx context.Context, m media.Media, spec Spec, key string) (made, error) {
	release, err := s.acquire(ctx)
	if err != nil {
		return made{}, err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, makeTimeout)
	defer cancel()
	var src []byte
	if m.MimeType == media.PDFType {
		src, err = s.pdfCover(ctx, m, spec)
	} else {
		src, err = s.source(ctx, m)
	}
	if err != nil {
		return made{}, err
	}
	out, err := s.imager.Render(src, spec)
	if err != nil {
		return made{}, err
	}
	sum := sha256.Sum256(out)
	mk := made{b: out, sum: hex.EncodeToString(sum[:]), at: s.now().UTC().Truncate(time.Second)}
	if err := s.blobs.PutBytes(ctx, key, ContentType(spec.Format), out, map[string]string{"sha256": mk.sum}); err != nil {
		s.log.WarnContext(ctx, "could not store a rendition; it is served unstored", "media_id", m.ID, "key", key, "error", err)
		return mk, nil
	}
	if err := s.goneMeanwhile(ctx, m, key); err != nil {
		return made{}, err
	}
	return mk, nil
}

// acquire takes a rendition slot, waiting at most Config.Wait.
func (s *Service) acquire(ctx context.Context) (func(), error) {
	return acquireSlot(ctx, s.slots, s.cfg)
}

// acquireSlot takes a place in slots, waiting at most cfg.Wait.
func acquireSlot(ctx context.Context, slots chan struct{}, cfg Config) (func(), error) {
	t := time.NewTimer(cfg.Wait)
	defer t.Stop()
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-t.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// source reads the original of m whole, after checking its size and its
// header: a small file may claim billions of pixels (a decompression bomb),
// which is refused before anything is decoded.
func (s *Service) source(ctx context.Context, m media.Media) ([]byte, error) {
	if m.Size > s.cfg.MaxSourceBytes {
		return nil, &NotRenderableError{Reason: fmt.Sprintf("the original is over %d bytes", s.cfg.MaxSourceBytes)}
	}
	obj, err := s.blobs.Open(ctx, m.ObjectKey)
	if err != nil {
		return nil, err
	}
	defer obj.Close()
	src, err := io.ReadAll(io.LimitReader(obj, s.cfg.MaxSourceBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(src)) > s.cfg.MaxSourceBytes {
		return nil, &NotRenderableError{Reason: fmt.Sprintf("the original is over %d bytes", s.cfg.MaxSourceBytes)}
	}
	if m.MimeType == "image/svg+xml" { // only when enabled (Renders); librsvg reads its size
		return src, nil
	}
	return src, s.checkHeader(src, m.MimeType)
}

// checkHeader reads the size libvips will decode (a GIF's frames may make
// it larger than its header says: media.DecodeConfig).
func (s *Service) checkHeader(src []byte, mimeType string) error {
	cfg, err := media.DecodeConfig(bytes.NewReader(src), mimeType)
	switch {
	case err != nil:
		return &NotRenderableError{Reason: "the image header cannot be read"}
	case cfg.Width <= 0 || cfg.Height <= 0:
		return &NotRenderableError{Reason: "the image header gives no size"}
	case cfg.Width*cfg.Height > s.cfg.MaxSourcePixels:
		return &NotRenderableError{Reason: fmt.Sprintf("the image header claims %d×%d pixels; at most %d are rendered",
			cfg.Width, cfg.Height, s.cfg.MaxSourcePixels)}
	}
	return nil
}
