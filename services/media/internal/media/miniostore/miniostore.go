// Package miniostore keeps the bytes of media in an S3 bucket through
// minio-go. Every call is bounded in time so a storage that is down or
// stalled makes requests fail with media.ErrStorageUnavailable instead of
// hanging: short calls get a fixed timeout, streams a stall watchdog (no
// progress for StallTimeout cancels them).
package miniostore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/doclib/libs/telemetry"

	"github.com/doclib/services/media/internal/media"
)

// PartSize is the size of each part of a streamed upload, and so the memory
// one upload holds. minio-go buffers a whole part; left at 0 with an unknown
// size it would pick parts of ~537 MiB. 16 MiB allows objects of 160 GiB.
const PartSize = 16 << 20

// Timeouts.
const (
	// OpTimeout bounds a call that moves no file body (stat, remove,
	// bucket checks).
	OpTimeout = 10 * time.Second
	// StallTimeout bounds the time a stream waits on the storage without
	// any byte moving.
	StallTimeout = 30 * time.Second
	dialTimeout  = 5 * time.Second
	// responseTimeout bounds the wait for the storage's answer once a
	// request (a 16 MiB part at most) has been sent.
	responseTimeout = 20 * time.Second
	// maxRetries of one request: a storage that refuses connections fails
	// an upload in about a second rather than after ten attempts.
	maxRetries = 3
)

// Config says where the bucket is.
type Config struct {
	Endpoint  string // host:port
	AccessKey string
	SecretKey string
	Bucket    string
	UseTLS    bool
	Region    string
}

// Store implements media.Blobs on one bucket.
type Store struct {
	client *minio.Client
	bucket string
	region string
}

var _ media.Blobs = (*Store)(nil)

// New returns a Store; it does not contact the storage (see EnsureBucket).
func New(cfg Config) (*Store, error) {
	tr, err := minio.DefaultTransport(cfg.UseTLS)
	if err != nil {
		return nil, err
	}
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = dialTimeout
	tr.ResponseHeaderTimeout = responseTimeout
	tr.ExpectContinueTimeout = time.Second
	tr.IdleConnTimeout = 90 * time.Second
	var rt http.RoundTripper = tr
	if telemetry.Enabled() {
		// minio-go has no tracing of its own: each S3 request is a client
		// span ("s3 PUT", ...) of the request that made it.
		rt = otelhttp.NewTransport(tr, otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
			return "s3 " + r.Method
		}))
	}
	c, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds:      credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:     cfg.UseTLS,
		Region:     cfg.Region,
		Transport:  rt,
		MaxRetries: maxRetries,
	})
	if err != nil {
		return nil, fmt.Errorf("s3 client: %w", err)
	}
	return &Store{client: c, bucket: cfg.Bucket, region: cfg.Region}, nil
}

// Bucket is the bucket's name.
func (s *Store) Bucket() string { return s.bucket }

// EnsureBucket creates the bucket when it is missing. Several replicas may
// race: the bucket made by another one counts as success.
func (s *Store) EnsureBucket(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("check bucket %s: %w", s.bucket, err)
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: s.region})
	switch minio.ToErrorResponse(err).Code {
	case "BucketAlreadyOwnedByYou", "BucketAlreadyExists":
		return nil
	}
	if err != nil {
		return fmt.Errorf("make bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Ready is a readiness check: the bucket exists and answers.
func (s *Store) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return errors.New("object storage unreachable")
	}
	if !ok {
		return fmt.Errorf("bucket %s is missing", s.bucket)
	}
	return nil
}

// Put implements media.Blobs. The size is unknown, so minio-go uploads in
// parts of PartSize and aborts the multipart upload itself when r fails.
func (s *Store) Put(ctx context.Context, key, contentType string, r io.Reader) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := newWatchdog(StallTimeout, cancel)
	defer w.stop()
	_, err := s.client.PutObject(ctx, s.bucket, key, &pausingReader{r: r, w: w}, -1, minio.PutObjectOptions{
		ContentType: contentType,
		PartSize:    PartSize,
		Progress:    w,
	})
	if err != nil && w.fired() {
		return fmt.Errorf("%w: no progress for %s", media.ErrStorageUnavailable, StallTimeout)
	}
	return classify(err)
}

// Open implements media.Blobs. GetObject is lazy: Stat makes the first
// request, so a missing object or a storage that is down shows here, before
// anything is sent to the client.
func (s *Store) Open(ctx context.Context, key string) (media.Object, error) {
	o, _, err := s.OpenInfo(ctx, key)
	return o, err
}

// OpenInfo is Open that also returns the object's size, time and metadata
// (from the same Stat).
func (s *Store) OpenInfo(ctx context.Context, key string) (media.Object, media.BlobInfo, error) {
	ctx, cancel := context.WithCancel(ctx)
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		cancel()
		return nil, media.BlobInfo{}, classify(err)
	}
	o := &object{obj: obj, cancel: cancel, w: newWatchdog(OpTimeout, cancel)}
	info, err := obj.Stat()
	o.w.pause()
	if err != nil {
		fired := o.w.fired()
		o.Close()
		if fired {
			return nil, media.BlobInfo{}, fmt.Errorf("%w: no answer within %s", media.ErrStorageUnavailable, OpTimeout)
		}
		return nil, media.BlobInfo{}, classify(err)
	}
	o.w.d = StallTimeout
	meta := make(map[string]string, len(info.UserMetadata))
	for k, v := range info.UserMetadata {
		meta[strings.ToLower(k)] = v
	}
	return o, media.BlobInfo{Size: info.Size, ModTime: info.LastModified, Meta: meta}, nil
}

// PutBytes implements media.Blobs: a small object in one request, with
// user metadata (keys lower-case).
func (s *Store) PutBytes(ctx context.Context, key, contentType string, b []byte, meta map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	_, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(b), int64(len(b)), minio.PutObjectOptions{
		ContentType: contentType, UserMetadata: meta,
	})
	return classify(err)
}

// RemovePrefix implements media.Blobs.
func (s *Store) RemovePrefix(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if o.Err != nil {
			return classify(o.Err)
		}
		if err := s.client.RemoveObject(ctx, s.bucket, o.Key, minio.RemoveObjectOptions{}); err != nil {
			return classify(err)
		}
	}
	return nil
}

// Remove implements media.Blobs: the unfinished multipart uploads to key
// are aborted (a put that failed, or crashed, leaves its parts behind;
// minio-go's own abort needs the storage up, and a canceled context), then
// the object is removed. Removing a missing key succeeds.
func (s *Store) Remove(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	if err := s.client.RemoveIncompleteUpload(ctx, s.bucket, key); err != nil {
		return classify(err)
	}
	return classify(s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}))
}

// AbortUnfinished implements media.Blobs.
func (s *Store) AbortUnfinished(ctx context.Context, cutoff time.Time) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	var stale []string
	for u := range s.client.ListIncompleteUploads(ctx, s.bucket, "", true) {
		if u.Err != nil {
			return 0, classify(u.Err)
		}
		if u.Initiated.Before(cutoff) {
			stale = append(stale, u.Key)
		}
	}
	for i, key := range stale {
		if err := s.client.RemoveIncompleteUpload(ctx, s.bucket, key); err != nil {
			return i, classify(err)
		}
	}
	return len(stale), nil
}

// Exists reports whether key is in the bucket (for tests and checks).
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	_, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err := classify(err); errors.Is(err, media.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, nil
}

// Keys lists every object key in the bucket (for tests and checks).
func (s *Store) Keys(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	var keys []string
	for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Recursive: true}) {
		if o.Err != nil {
			return nil, classify(o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys, nil
}

// IncompleteUploads counts multipart uploads left unfinished (for tests:
// minio-go must have aborted them).
func (s *Store) IncompleteUploads(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	n := 0
	for u := range s.client.ListIncompleteUploads(ctx, s.bucket, "", true) {
		if u.Err != nil {
			return 0, classify(u.Err)
		}
		n++
	}
	return n, nil
}

// StartUnfinished begins a multipart upload to key, sends one part and
// leaves it unfinished, as an upload that crashed would (for tests).
func (s *Store) StartUnfinished(ctx context.Context, key string) error {
	core := minio.Core{Client: s.client}
	id, err := core.NewMultipartUpload(ctx, s.bucket, key, minio.PutObjectOptions{})
	if err != nil {
		return classify(err)
	}
	part := bytes.Repeat([]byte{'x'}, 5<<20)
	_, err = core.PutObjectPart(ctx, s.bucket, key, id, 1, bytes.NewReader(part), int64(len(part)), minio.PutObjectPartOptions{})
	return classify(err)
}

// classify maps storage errors: a missing object is media.ErrNotFound; a
// missing bucket, not made yet, is unavailable; the storage refusing a request (4xx: credentials, a bad bucket) stays as it
// is, a bug or misconfiguration; anything else (unreachable, timed out,
// 5xx) is media.ErrStorageUnavailable.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var resp minio.ErrorResponse
	if errors.As(err, &resp) {
		switch {
		case resp.Code == "NoSuchKey":
			return media.ErrNotFound
		case resp.Code == "NoSuchBucket":
			// Made in the background at start-up (the storage was down).
			return fmt.Errorf("%w: %w", media.ErrStorageUnavailable, err)
		case resp.StatusCode >= 400 && resp.StatusCode < 500:
			return fmt.Errorf("object storage refused: %w", err)
		}
	}
	return fmt.Errorf("%w: %w", media.ErrStorageUnavailable, err)
}

// object is an opened blob whose reads are watched for stalls; closing it
// releases its context.
type object struct {
	obj    *minio.Object
	cancel context.CancelFunc
	w      *watchdog
}

func (o *object) Read(p []byte) (int, error) {
	o.w.kick()
	n, err := o.obj.Read(p)
	o.w.pause()
	if err != nil && o.w.fired() {
		return n, fmt.Errorf("%w: no data for %s", media.ErrStorageUnavailable, o.w.d)
	}
	return n, err
}

func (o *object) Seek(offset int64, whence int) (int64, error) { return o.obj.Seek(offset, whence) }

func (o *object) Close() error {
	o.w.stop()
	err := o.obj.Close()
	o.cancel()
	return err
}

// watchdog calls cancel when it has been kicked and not paused or kicked
// again within d.
type watchdog struct {
	mu     sync.Mutex
	d      time.Duration
	t      *time.Timer
	cancel context.CancelFunc
	done   bool
}

func newWatchdog(d time.Duration, cancel context.CancelFunc) *watchdog {
	w := &watchdog{d: d, cancel: cancel}
	w.t = time.AfterFunc(d, func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
		cancel()
	})
	return w
}

func (w *watchdog) kick()  { w.t.Reset(w.d) }
func (w *watchdog) pause() { w.t.Stop() }
func (w *watchdog) stop()  { w.t.Stop() }

func (w *watchdog) fired() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

// Read makes the watchdog a progress sink for minio-go: every chunk sent to
// the storage is progress.
func (w *watchdog) Read(p []byte) (int, error) {
	w.kick()
	return len(p), nil
}

// pausingReader stops the watchdog while the upload waits on its source (the
// client's body): a slow client is not a stalled storage.
type pausingReader struct {
	r io.Reader
	w *watchdog
}

func (p *pausingReader) Read(b []byte) (int, error) {
	p.w.pause()
	defer p.w.kick()
	return p.r.Read(b)
}
