package media

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"time"

	"github.com/doclib/libs/identity"
)

// Defaults of the upload rules (CONTRACT.md §4).
const DefaultMaxSize = 100 << 20

// DefaultAllowedTypes are the types an upload may have unless configured.
var DefaultAllowedTypes = []string{"application/pdf", "image/png", "image/jpeg", "image/gif", "image/webp"}

// sniffLen is how many leading bytes decide the type (all that
// http.DetectContentType looks at).
const sniffLen = 512

// StuckAfter is how long a deletion mark may stay before Sweep clears it: a
// deletion takes seconds (the catalog call is bounded), so a older mark was
// left by a crash.
const StuckAfter = time.Minute

// cleanupTimeout bounds the removal of a half-made object after a failure,
// which must run even when the request's context is done.
const cleanupTimeout = 10 * time.Second

// Config holds the upload rules.
type Config struct {
	MaxSize      int64
	AllowedTypes []string
}

// Service is the media use cases.
type Service struct {
	store Store
	blobs Blobs
	usage UsageChecker
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
}

// NewService returns a Service. Zero Config fields take the defaults.
func NewService(store Store, blobs Blobs, usage UsageChecker, cfg Config, log *slog.Logger) *Service {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if len(cfg.AllowedTypes) == 0 {
		cfg.AllowedTypes = DefaultAllowedTypes
	}
	return &Service{
		store: store, blobs: blobs, usage: usage, cfg: cfg, log: log,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) },
	}
}

// MaxSize is the largest upload accepted, in bytes.
func (s *Service) MaxSize() int64 { return s.cfg.MaxSize }

// Upload stores the file read from r under a name made from filename. The
// bytes are streamed to Blobs: the type is detected from the first bytes, the
// size is counted and the checksum computed on the way. On any failure
// nothing is left behind: the object is removed and no record is written.
func (s *Service) Upload(ctx context.Context, filename string, r io.Reader) (Media, error) {
	br := bufio.NewReaderSize(r, sniffLen)
	head, err := br.Peek(sniffLen)
	if err != nil && !errors.Is(err, io.EOF) {
		return Media{}, s.bodyError(err)
	}
	mimeType := detect(head)
	if !slices.Contains(s.cfg.AllowedTypes, mimeType) {
		return Media{}, &UnsupportedTypeError{Detected: mimeType, Allowed: s.cfg.AllowedTypes}
	}

	now := s.now()
	by := identity.Name(ctx)
	m := Media{ID: NewID(), Name: CleanName(filename), MimeType: mimeType, ObjectKey: newObjectKey(),
		CreatedAt: now, UpdatedAt: now, CreatedBy: by, UpdatedBy: by}
	in := &meter{r: br, max: s.cfg.MaxSize, h: sha256.New(), fail: s.bodyError}
	if err := s.blobs.Put(ctx, m.ObjectKey, mimeType, in); err != nil {
		s.removeObject(ctx, m.ObjectKey)
		if in.err != nil { // the reader failed: that is the cause, not the storage
			return Media{}, in.err
		}
		return Media{}, err
	}
	if in.err != nil { // cannot happen with a well-behaved Blobs, but never keep a partial file
		s.removeObject(ctx, m.ObjectKey)
		return Media{}, in.err
	}
	m.Size, m.SHA256 = in.n, hex.EncodeToString(in.h.Sum(nil))
	if err := s.store.Insert(ctx, m); err != nil {
		s.removeObject(ctx, m.ObjectKey)
		return Media{}, err
	}
	return m, nil
}

// detect returns the media type of content from its first bytes, without
// parameters (the bytes decide, not what the uploader claimed).
func detect(head []byte) string {
	ct := http.DetectContentType(head)
	if mt, _, err := mime.ParseMediaType(ct); err == nil {
		return mt
	}
	return ct
}

func (s *Service) removeObject(ctx context.Context, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := s.blobs.Remove(ctx, key); err != nil {
		s.log.WarnContext(ctx, "could not remove the object of a failed upload", "object_key", key, "error", err)
	}
}

// meter passes the upload through while counting and hashing it, and fails
// (so Blobs.Put aborts) once more than max bytes came or the body broke off.
// A broken body must fail with an error of its own: multipart reports a
// body cut off mid-part as io.ErrUnexpectedEOF, which an uploader would take
// for a short last chunk and complete a truncated object.
type meter struct {
	r    io.Reader
	max  int64
	n    int64
	h    hash.Hash
	fail func(error) error
	err  error
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

// Get returns the live media id.
func (s *Service) Get(ctx context.Context, id string) (Media, error) {
	if !ValidID(id) {
		return Media{}, ErrNotFound
	}
	return s.store.Get(ctx, id)
}

// List returns every live media, newest first.
func (s *Service) List(ctx context.Context) ([]Media, error) { return s.store.List(ctx) }

// Lookup returns the media among ids that are live or being deleted
// (Deleting), for other services' reference checks; unknown and deleted ids
// are left out. A new reference must not name a media being deleted; one
// already stored keeps it until the deletion is done.
func (s *Service) Lookup(ctx context.Context, ids []string) ([]Media, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if ValidID(id) && !slices.Contains(valid, id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return []Media{}, nil
	}
	return s.store.Lookup(ctx, valid)
}

// Open returns the live media id and its bytes; the caller closes the Object.
func (s *Service) Open(ctx context.Context, id string) (Media, Object, error) {
	m, err := s.Get(ctx, id)
	if err != nil {
		return Media{}, nil, err
	}
	obj, err := s.blobs.Open(ctx, m.ObjectKey)
	if errors.Is(err, ErrNotFound) {
		s.log.ErrorContext(ctx, "the object of a media record is missing", "media_id", id, "object_key", m.ObjectKey)
	}
	if err != nil {
		return Media{}, nil, err
	}
	return m, obj, nil
}

// Delete deletes the media id unless a live document uses it. The record is
// marked first (a single conditional write, so of two deletions racing
// only one marks it; the other finds no live record), which hides it and
// stops new documents from naming it while the catalog is asked (the
// catalog counts its writes in flight too: see its document/refs.go);
// then it becomes a tombstone carrying the deletion event in one write,
// and the object is removed (Sweep retries if that fails).
func (s *Service) Delete(ctx context.Context, id string) error {
	if !ValidID(id) {
		return ErrNotFound
	}
	token := newToken()
	m, err := s.store.MarkDeleting(ctx, id, token, s.now())
	if err != nil {
		return err
	}
	u, err := s.usage.Usage(ctx, id)
	if err == nil && u.InUse {
		err = &InUseError{DocumentIDs: u.DocumentIDs}
	} else if err != nil {
		s.log.WarnContext(ctx, "could not ask the catalog about a media", "media_id", id, "error", err)
		err = fmt.Errorf("%w: %w", ErrUsageUnknown, err)
	}
	if err != nil {
		s.release(ctx, id, token)
		return err
	}
	if err := s.store.Tombstone(ctx, id, token, s.now()); err != nil {
		s.release(ctx, id, token)
		return err
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := s.blobs.Remove(rctx, m.ObjectKey); err != nil {
		s.log.WarnContext(ctx, "could not remove the object of a deleted media; the sweep will retry",
			"media_id", id, "object_key", m.ObjectKey, "error", err)
	}
	return nil
}

// release undoes a deletion mark; should that fail, Sweep clears it later.
func (s *Service) release(ctx context.Context, id, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := s.store.ClearDeleting(ctx, id, token); err != nil {
		s.log.WarnContext(ctx, "could not clear a deletion mark; the sweep will", "media_id", id, "error", err)
	}
}

// Sweep finishes interrupted work, idempotently and safely on several
// replicas: deletion marks older than StuckAfter are cleared, and tombstones
// whose event has been published lose their object and then their record.
// The outbox relay runs it after publishing.
func (s *Service) Sweep(ctx context.Context) error {
	n, err := s.store.ReleaseStuck(ctx, s.now().Add(-StuckAfter))
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.InfoContext(ctx, "cleared stuck deletion marks", "count", n)
	}
	done, err := s.store.Swept(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range done {
		if err := s.blobs.Remove(ctx, m.ObjectKey); err != nil {
			errs = append(errs, fmt.Errorf("remove object of %s: %w", m.ID, err))
			continue // keep the record so the next sweep retries
		}
		if err := s.store.Purge(ctx, m.ID); err != nil {
			errs = append(errs, fmt.Errorf("purge %s: %w", m.ID, err))
		}
	}
	return errors.Join(errs...)
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
