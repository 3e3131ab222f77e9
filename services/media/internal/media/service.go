package media

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
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

// DBBudget bounds the database calls around a stream (an upload, a
// download), whose requests take no overall budget: a database that does
// not answer makes them fail within this (docs/platform.md, "When a part is down": 503 within ~5 s).
const DBBudget = 5 * time.Second

// undoTimeout bounds a database write that undoes or tidies up after a
// failure (a deletion mark, an upload intent): it runs before the answer,
// and when the database is what failed, the sweep does it later instead.
const undoTimeout = 2 * time.Second

// Config holds the upload rules.
type Config struct {
	MaxSize      int64
	AllowedTypes []string
	// MaxUploadTime is the longest an upload may stream (the server's read
	// timeout); an upload begun longer ago than that (plus a margin) has
	// ended, so the sweep may remove what it left. Default 30 minutes.
	MaxUploadTime time.Duration
	// StripMetadata removes EXIF (GPS included), XMP, IPTC and comments
	// from JPEG uploads before they are stored (StripJPEG); the orientation
	// is kept. Other types are stored as they came.
	StripMetadata bool
}

// Service is the media use cases.
type Service struct {
	store Store
	blobs Blobs
	usage UsageChecker
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	pdf   PDFInspector // nil: PDFs get no page count
	// inspecting bounds the PDFs read at once (InspectConcurrency).
	inspecting chan struct{}
}

// WithPDF makes uploads of PDFs read their page count and first page's
// size with p.
func (s *Service) WithPDF(p PDFInspector) *Service {
	s.pdf = p
	return s
}

// NewService returns a Service. Zero Config fields take the defaults.
func NewService(store Store, blobs Blobs, usage UsageChecker, cfg Config, log *slog.Logger) *Service {
	if cfg.MaxSize <= 0 {
		cfg.MaxSize = DefaultMaxSize
	}
	if len(cfg.AllowedTypes) == 0 {
		cfg.AllowedTypes = DefaultAllowedTypes
	}
	if cfg.MaxUploadTime <= 0 {
		cfg.MaxUploadTime = 30 * time.Minute
	}
	return &Service{
		inspecting: make(chan struct{}, InspectConcurrency),
		store:      store, blobs: blobs, usage: usage, cfg: cfg, log: log,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) },
	}
}

// MaxSize is the largest upload accepted, in bytes.
func (s *Service) MaxSize() int64 { return s.cfg.MaxSize }

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
	dbctx, cancel := context.WithTimeout(ctx, DBBudget)
	m, err := s.Get(dbctx, id)
	cancel()
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
// stops new documents from naming it while the catalog is asked (see the
// catalog's document/refs.go); then one transaction makes it a tombstone
// and records the deletion event, and the objects are removed, then the
// tombstone (Sweep retries what fails).
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
	if err := s.removeObjects(rctx, m); err != nil {
		s.log.WarnContext(ctx, "could not remove the objects of a deleted media; the sweep will retry",
			"media_id", id, "object_key", m.ObjectKey, "error", err)
	}
	return nil
}

// removeObjects removes a tombstone's object and renditions, then the
// tombstone.
func (s *Service) removeObjects(ctx context.Context, m Media) error {
	if err := errors.Join(s.blobs.Remove(ctx, m.ObjectKey), s.removeRenditions(ctx, m)); err != nil {
		return fmt.Errorf("remove object or renditions of %s: %w", m.ID, err)
	}
	if err := s.store.RemoveTombstone(ctx, m.ID); err != nil {
		return fmt.Errorf("remove tombstone %s: %w", m.ID, err)
	}
	return nil
}

// removeRenditions removes the renditions of a swept tombstone's bytes,
// unless a live media has the same bytes again (uploaded since): the
// renditions are theirs now.
func (s *Service) removeRenditions(ctx context.Context, m Media) error {
	if _, err := s.store.ByDigest(ctx, m.SHA256); err == nil || !errors.Is(err, ErrNotFound) {
		return err
	}
	return s.blobs.RemovePrefix(ctx, RenditionPrefix(m.SHA256))
}

// release undoes a deletion mark; should that fail, Sweep clears it later.
func (s *Service) release(ctx context.Context, id, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	if err := s.store.ClearDeleting(ctx, id, token); err != nil {
		s.log.WarnContext(ctx, "could not clear a deletion mark; the sweep will", "media_id", id, "error", err)
	}
}

// Sweep finishes interrupted work, idempotently and safely on several
// replicas: what failed or crashed uploads left is removed (sweepUploads),
// deletion marks older than StuckAfter are cleared, and tombstones lose
// their objects, then their record (a deletion does that at once; the
// sweep retries what failed).
func (s *Service) Sweep(ctx context.Context) error {
	uploadsErr := errors.Join(s.sweepUploads(ctx), s.sizeOlderImages(ctx))
	n, err := s.store.ReleaseStuck(ctx, s.now().Add(-StuckAfter))
	if err != nil {
		return err
	}
	if n > 0 {
		s.log.InfoContext(ctx, "cleared stuck deletion marks", "count", n)
	}
	done, err := s.store.Sweepable(ctx)
	if err != nil {
		return err
	}
	errs := []error{uploadsErr}
	for _, m := range done {
		errs = append(errs, s.removeObjects(ctx, m))
	}
	return errors.Join(errs...)
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
