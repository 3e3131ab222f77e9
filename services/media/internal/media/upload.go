package media

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"image"
	_ "image/gif" // image.DecodeConfig reads GIF, JPEG and PNG headers
	_ "image/jpeg"
	_ "image/png"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	_ "golang.org/x/image/webp" // and WebP (the standard library has no WebP)

	"github.com/doclib/libs/identity"
)

// Limits of an image's header: more would be a decompression bomb for the
// apps that lay it out, or a header that does not describe the file.
const (
	MaxImageSide   = 65535
	MaxImagePixels = 100_000_000
)

// decodable are the image types whose header DecodeConfig reads.
var decodable = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// Upload stores the file read from r under a name made from filename. The
// bytes stream to Blobs, never held whole: the type is detected from the
// first bytes, the size counted, the SHA-256 computed and an image's header
// read on the way. Bytes already stored as a media are not stored twice: the
// existing media is returned with created false, also when identical
// uploads race (the store's unique digest decides; the losers remove their
// object). On any failure nothing is left behind: no record, and the object
// and its unfinished parts removed, now or, should the storage be down, by
// the sweep, which the upload's intent points to.
func (s *Service) Upload(ctx context.Context, filename string, r io.Reader) (Media, bool, error) {
	br, mimeType, err := s.sniff(r)
	if err != nil {
		return Media{}, false, err
	}
	now := s.now()
	by := identity.Name(ctx)
	m := Media{ID: NewID(), Name: CleanName(filename), MimeType: mimeType, ObjectKey: newObjectKey(),
		CreatedAt: now, UpdatedAt: now, CreatedBy: by, UpdatedBy: by}
	return s.put(ctx, m, br, nil)
}

// sniff decides the type of the bytes from their start.
func (s *Service) sniff(r io.Reader) (*bufio.Reader, string, error) {
	br := bufio.NewReaderSize(r, sniffLen)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, "", s.bodyError(err)
	}
	mimeType := detect(head)
	if !slices.Contains(s.cfg.AllowedTypes, mimeType) {
		return nil, "", &UnsupportedTypeError{Detected: mimeType, Allowed: s.cfg.AllowedTypes}
	}
	return br, mimeType, nil
}

// put streams the bytes of m to its object and stores its record; with
// want (an import), the bytes must have want's size and digest, and a
// media of the same bytes is answered only if it is want itself.
func (s *Service) put(ctx context.Context, m Media, br *bufio.Reader, want *Media) (Media, bool, error) {
	key := m.ObjectKey
	begin, cancel := context.WithTimeout(ctx, DBBudget)
	err := s.store.Uploads().Begin(begin, key, s.now())
	cancel()
	if err != nil {
		return Media{}, false, err
	}
	keep := false // this upload's object stays only once its record is stored
	defer func() {
		if !keep {
			s.discard(ctx, key)
		}
	}()

	var src io.Reader = br
	if want == nil && s.cfg.StripMetadata && m.MimeType == "image/jpeg" { // imported bytes are stored ones
		stripped := StripJPEG(br)
		defer stripped.Close()
		src = stripped
	}
	in := &meter{r: src, max: s.cfg.MaxSize, h: sha256.New(), fail: s.bodyError}
	if s.pdf != nil && m.MimeType == PDFType {
		spool, err := newSpool()
		if err != nil {
			return Media{}, false, err
		}
		defer spool.remove()
		in.spool = spool
	}
	if slices.Contains(decodable, m.MimeType) {
		in.header = readHeader(m.MimeType)
		defer in.header.stop()
	}
	if err := s.blobs.Put(ctx, m.ObjectKey, m.MimeType, in); err != nil {
		if in.err != nil { // the reader failed: that is the cause, not the storage
			return Media{}, false, in.err
		}
		return Media{}, false, err
	}
	if in.err != nil { // cannot happen with a well-behaved Blobs, but never keep a partial file
		return Media{}, false, in.err
	}
	m.Size, m.SHA256 = in.n, hex.EncodeToString(in.h.Sum(nil))
	if want != nil && (m.Size != want.Size || m.SHA256 != want.SHA256) {
		return Media{}, false, &DigestError{Size: m.Size, SHA256: m.SHA256, Want: *want}
	}
	if in.spool != nil {
		s.inspectPDF(ctx, &m, in.spool)
	}
	// The stream is over: what is left is database calls, bounded as one.
	ctx, cancel = context.WithTimeout(ctx, DBBudget)
	defer cancel()
	if in.header != nil {
		var err error
		if m.Width, m.Height, err = checkImage(in.header.result()); err != nil {
			return Media{}, false, err
		}
	}

	if existing, stored, err := s.insert(ctx, m, want); !stored {
		return existing, false, err
	}
	keep = true // the insert ended the intent, in its transaction
	return m, true, nil
}

// insert stores the record m; stored is false when it was not, with the
// media already holding these bytes (or the error).
func (s *Service) insert(ctx context.Context, m Media, want *Media) (Media, bool, error) {
	switch err := s.store.Insert(ctx, m); {
	case errors.Is(err, ErrDuplicate):
		// These bytes are stored already (or were just now, by an upload
		// racing this one): answer with that media; this object goes.
		existing, err := s.store.ByDigest(ctx, m.SHA256)
		switch {
		case errors.Is(err, ErrNotFound):
			return Media{}, false, ErrSameBeingDeleted // gone meanwhile: try again
		case err != nil:
			return Media{}, false, err
		case existing.Deleting:
			return Media{}, false, ErrSameBeingDeleted
		case want != nil:
			return existing, false, sameImport(existing, *want)
		}
		return existing, false, nil
	case err != nil:
		return Media{}, false, err
	}
	return m, true, nil
}

// checkImage turns the header's answer into dimensions or an ImageError.
func checkImage(cfg image.Config, err error) (int, int, error) {
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return 0, 0, &ImageError{Reason: "the file ends inside the image header"}
	case err != nil:
		return 0, 0, &ImageError{Reason: "the image header cannot be read (" + strings.TrimPrefix(err.Error(), "image: ") + ")"}
	case cfg.Width <= 0 || cfg.Height <= 0:
		return 0, 0, &ImageError{Reason: fmt.Sprintf("the image header gives a size of %d×%d pixels", cfg.Width, cfg.Height)}
	case cfg.Width > MaxImageSide || cfg.Height > MaxImageSide || cfg.Width*cfg.Height > MaxImagePixels:
		return 0, 0, &ImageError{Reason: fmt.Sprintf("the image header gives %d×%d pixels; at most %d a side and %d in all",
			cfg.Width, cfg.Height, MaxImageSide, MaxImagePixels)}
	}
	return cfg.Width, cfg.Height, nil
}

// discard removes what a failed or duplicate upload wrote, the unfinished
// parts of a multipart upload included, even once the request's context is
// done. If the storage cannot be reached, the intent is marked failed and
// the sweep removes the object when the storage is back.
func (s *Service) discard(ctx context.Context, key string) {
	ctx = context.WithoutCancel(ctx)
	rctx, cancel := context.WithTimeout(ctx, cleanupTimeout)
	err := s.blobs.Remove(rctx, key)
	cancel()
	dbctx, cancel := context.WithTimeout(ctx, undoTimeout)
	defer cancel()
	if err != nil {
		s.log.WarnContext(ctx, "could not remove the object of a failed upload; the sweep will", "object_key", key, "error", err)
		if err := s.store.Uploads().Fail(dbctx, key); err != nil {
			s.log.WarnContext(ctx, "could not mark a failed upload for the sweep; it finds it once stale", "object_key", key, "error", err)
		}
		return
	}
	if err := s.store.Uploads().End(dbctx, key); err != nil {
		s.log.WarnContext(ctx, "could not clear a failed upload's intent; the sweep will", "object_key", key, "error", err)
	}
}

// sweepUploads removes what uploads that failed or crashed left: the object
// and unfinished parts of every stale intent no record holds, and any
// unfinished multipart upload older than an upload can last (one begun
// before intents existed, or whose intent is lost).
func (s *Service) sweepUploads(ctx context.Context) error {
	cutoff := s.now().Add(-s.cfg.MaxUploadTime - uploadMargin)
	keys, err := s.store.Uploads().Stale(ctx, cutoff)
	if err != nil {
		return fmt.Errorf("stale uploads: %w", err)
	}
	var errs []error
	for _, key := range keys {
		used, err := s.store.Uploads().Referenced(ctx, key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !used {
			if err := s.blobs.Remove(ctx, key); err != nil {
				errs = append(errs, fmt.Errorf("remove object %s of a failed upload: %w", key, err))
				continue
			}
			s.log.InfoContext(ctx, "removed what a failed upload left", "object_key", key)
		}
		if err := s.store.Uploads().End(ctx, key); err != nil {
			errs = append(errs, err)
		}
	}
	if n, err := s.blobs.AbortUnfinished(ctx, cutoff); err != nil {
		errs = append(errs, fmt.Errorf("unfinished uploads: %w", err))
	} else if n > 0 {
		s.log.InfoContext(ctx, "aborted unfinished multipart uploads", "count", n)
	}
	return errors.Join(errs...)
}

// sizeOlderImages reads the header of images stored before their size was
// read, a few per sweep, from their object (DecodeConfig reads no further
// than the header), and records their width and height.
func (s *Service) sizeOlderImages(ctx context.Context) error {
	ms, err := s.store.Unsized(ctx, decodable, sizePerSweep)
	if err != nil {
		return fmt.Errorf("images without a size: %w", err)
	}
	var errs []error
	for _, m := range ms {
		obj, err := s.blobs.Open(ctx, m.ObjectKey)
		if err != nil {
			errs = append(errs, fmt.Errorf("open %s to read its size: %w", m.ID, err))
			continue
		}
		cfg, err := DecodeConfig(obj, m.MimeType)
		_ = obj.Close()
		w, h, err := checkImage(cfg, err)
		if err != nil {
			s.log.WarnContext(ctx, "the header of a stored image cannot be read; it keeps no size", "media_id", m.ID, "error", err)
		}
		if err := s.store.SetSize(ctx, m.ID, w, h); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sizePerSweep bounds the images sized by one sweep.
const sizePerSweep = 20

// uploadMargin is added to MaxUploadTime before an upload counts as over.
const uploadMargin = 5 * time.Minute

// detect returns the media type of content from its first bytes, without
// parameters (the bytes decide, not what the uploader claimed).
func detect(head []byte) string {
	ct := http.DetectContentType(head)
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return mt
	}
	return ct
}

// meter passes the upload through while counting and hashing it (and
// feeding an image's header reader), and fails (so Blobs.Put aborts) once
// more than max bytes came or the body broke off. A broken body must fail
// with an error of its own: multipart reports a body cut off mid-part as
// io.ErrUnexpectedEOF, which an uploader would take for a short last chunk
// and complete a truncated object.
type meter struct {
	r      io.Reader
	max    int64
	n      int64
	h      hash.Hash
	header *headerReader
	spool  *spool // a PDF's bytes, for its inspection
	fail   func(error) error
	err    error
}

func (m *meter) Read(p []byte) (int, error) {
	if m.err != nil {
		return 0, m.err
	}
	if room := m.max + 1 - m.n; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := m.r.Read(p)
	m.n += int64(n)
	if m.n > m.max {
		m.err = &TooLargeError{Limit: m.max}
		return 0, m.err
	}
	m.h.Write(p[:n])
	if m.spool != nil && m.spool.err == nil {
		_, m.spool.err = m.spool.f.Write(p[:n])
	}
	if m.header != nil {
		m.header.feed(p[:n])
	}
	if err != nil && !errors.Is(err, io.EOF) {
		m.err = m.fail(err)
		return n, m.err
	}
	return n, err
}

// bodyError classifies a failure to read the upload's body: the server's
// cap on the whole request (http.MaxBytesReader) is the size limit too.
func (s *Service) bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &TooLargeError{Limit: s.cfg.MaxSize}
	}
	return &IncompleteError{Err: err}
}

// headerReader reads an image's size with DecodeConfig as the bytes
// stream past: they are fed through a pipe to a goroutine until the decoder
// has what it needs, so nothing is held but the decoder's own small buffers,
// however far into the file the header ends (a JPEG's frame header may come
// after large metadata segments).
type headerReader struct {
	pw   *io.PipeWriter
	done chan struct{}
	cfg  image.Config
	err  error
	fed  bool // false once the decoder stopped reading
}

func readHeader(mimeType string) *headerReader {
	pr, pw := io.Pipe()
	h := &headerReader{pw: pw, done: make(chan struct{}), fed: true}
	go func() {
		defer close(h.done)
		h.cfg, h.err = DecodeConfig(pr, mimeType)
		pr.CloseWithError(errHeaderRead) // later feeds return at once
	}()
	return h
}

var errHeaderRead = errors.New("image header read")

func (h *headerReader) feed(p []byte) {
	if h.fed && len(p) > 0 {
		if _, err := h.pw.Write(p); err != nil {
			h.fed = false
		}
	}
}

// result ends the feed (a decoder still reading sees the file end) and
// returns what the decoder found.
func (h *headerReader) result() (image.Config, error) {
	h.stop()
	return h.cfg, h.err
}

func (h *headerReader) stop() {
	_ = h.pw.Close()
	<-h.done
}
