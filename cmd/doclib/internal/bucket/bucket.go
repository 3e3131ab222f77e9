// Package bucket keeps archives in an S3 bucket (the chart's CronJob): an
// export streams into one object, which appears only once complete (a
// multipart upload is invisible until completed; one killed mid-way is
// aborted by the next run), and only the newest Keep archives are kept.
package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config is where archives go, from the same S3 variables as the media
// service (S3_ENDPOINT, S3_ACCESS_KEY, S3_SECRET_KEY, S3_USE_TLS,
// S3_REGION) plus the bucket and prefix of the archives.
type Config struct {
	Endpoint, AccessKey, SecretKey, Region string
	UseTLS                                 bool
	Bucket, Prefix                         string
	Keep                                   int
}

// partSize bounds the memory of an upload of unknown length: minio-go
// buffers one part.
const partSize = 16 << 20

// Store is a bucket of archives.
type Store struct {
	c   *minio.Client
	cfg Config
}

// Open connects to the bucket (it must exist).
func Open(ctx context.Context, cfg Config) (*Store, error) {
	c, err := minio.New(cfg.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure: cfg.UseTLS, Region: cfg.Region})
	if err != nil {
		return nil, err
	}
	ok, err := c.BucketExists(ctx, cfg.Bucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	if !ok {
		return nil, fmt.Errorf("bucket %s does not exist", cfg.Bucket)
	}
	return &Store{c: c, cfg: cfg}, nil
}

// Name is the object name of an archive begun at t: names sort by time.
func (s *Store) Name(t time.Time, compressed bool) string {
	name := s.cfg.Prefix + "doclib-" + t.UTC().Format("20060102T150405Z") + ".tar"
	if compressed {
		name += ".zst"
	}
	return name
}

// Write streams what write produces into the object name; on any error the
// upload is aborted and no object appears.
func (s *Store) Write(ctx context.Context, name string, write func(io.Writer) error) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		_, err := s.c.PutObject(ctx, s.cfg.Bucket, name, pr, -1,
			minio.PutObjectOptions{ContentType: "application/x-tar", PartSize: partSize})
		pr.CloseWithError(err)
		done <- err
	}()
	werr := write(pw)
	pw.CloseWithError(werr)
	perr := <-done
	if werr != nil {
		_ = s.c.RemoveIncompleteUpload(context.WithoutCancel(ctx), s.cfg.Bucket, name)
		return werr
	}
	return perr
}

// Prune removes all but the newest Keep archives, and multipart uploads
// an earlier run left unfinished (an exporter killed mid-way). It returns
// the names removed.
func (s *Store) Prune(ctx context.Context) ([]string, error) {
	var names []string
	for obj := range s.c.ListObjects(ctx, s.cfg.Bucket, minio.ListObjectsOptions{Prefix: s.cfg.Prefix + "doclib-"}) {
		if obj.Err != nil {
			return nil, obj.Err
		}
		names = append(names, obj.Key)
	}
	for up := range s.c.ListIncompleteUploads(ctx, s.cfg.Bucket, s.cfg.Prefix+"doclib-", true) {
		if up.Err == nil && time.Since(up.Initiated) > time.Hour { // not a run going on now
			_ = s.c.RemoveIncompleteUpload(ctx, s.cfg.Bucket, up.Key)
		}
	}
	return removeOldest(Archives(s.cfg.Prefix, names), s.cfg.Keep, func(name string) error {
		return s.c.RemoveObject(ctx, s.cfg.Bucket, name, minio.RemoveObjectOptions{})
	})
}

// removeOldest removes, with remove, all but the keep newest of names
// (oldest first). An archive it cannot remove (under legal hold or
// retention) is skipped and does not count toward keep (the keep newest
// stay besides it); the others go on being removed, and every failure is
// returned, joined.
func removeOldest(names []string, keep int, remove func(string) error) ([]string, error) {
	var removed []string
	var errs []error
	for _, name := range names[:max(len(names)-keep, 0)] {
		if err := remove(name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		removed = append(removed, name)
	}
	return removed, errors.Join(errs...)
}

// archiveName is the name Name gives (after the prefix): only these are
// counted and pruned, so an object someone put there by hand (a
// doclib-pre-upgrade.tar) is neither deleted nor, sorting after the
// timestamps, counted as the newest in place of the archive just written.
var archiveName = regexp.MustCompile(`^doclib-[0-9]{8}T[0-9]{6}Z\.tar(\.zst)?$`)

// Archives returns, oldest first, the keys among keys that are archives
// this exporter wrote under prefix.
func Archives(prefix string, keys []string) []string {
	var names []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) && archiveName.MatchString(k[len(prefix):]) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}
