package library

// The rule this file keeps: a bundle is a first sync (sync.go) made whole
// in one answer. Its documents are exactly those of the first sync page of
// the same snapshot, read without the count and byte bounds, and its
// cursor is the one that page would end with, so a client that holds the
// bundle and then syncs from its cursor misses nothing written meanwhile
// (CONTRACT.md §8's guarantee, as for any first sync). The details, the
// public settings and the files' records are carried beside the listing;
// the tag filter picks which documents' details and files are carried,
// never which documents are listed: the listing must stay the whole public
// library, or a document outside the filter that never changes again would
// never reach the client.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// BundleSource gives what a bundle carries beside the documents: the
// public settings, which the taxonomy keeps, and the records of the files
// the documents name, which the media service keeps. The upstream client
// that gives the tag categories (Taxonomy) gives them too.
type BundleSource interface {
	// PublicConfig is the body of the taxonomy's GET /public/config.
	PublicConfig(ctx context.Context) (json.RawMessage, error)
	// Files returns the media records (FileMedia) of those of ids that
	// exist and are not being deleted.
	Files(ctx context.Context, ids []string) ([]File, error)
}

// File is a media record as the public API shows it (FileMedia), and its
// byte count.
type File struct {
	ID     string
	Size   int64
	Record json.RawMessage
}

// ErrNoBundleSource: the library was made without a BundleSource.
var ErrNoBundleSource = errors.New("no source of the public settings and media records")

// MaxBundleTags bounds the tag filter of a bundle.
const MaxBundleTags = 100

// Bundle is the public library at one snapshot, for an app's first start.
type Bundle struct {
	From *Snapshot
	// Next is the cursor to sync from after the bundle.
	Next Cursor
	// Listing is every public document (the first sync's documents).
	Listing []*document.Document
	// Details are the documents of Listing the filter keeps (all without
	// one), whose details, texts and files the bundle carries.
	Details []*document.Document
	// Tags is the filter ([] : none).
	Tags []string
	// Categories is the TagCategory[] JSON; Config the public settings.
	Categories json.RawMessage
	Config     json.RawMessage
	// Files are the records of the media the details name (a PDF's file,
	// a MARKDOWN or HTML document's images), FilesSize their bytes.
	Files     []File
	FilesSize int64
	// ETag is a strong tag of everything the bundle holds (identity).
	ETag string
}

// Bundle returns the bundle of the snapshot a first sync would be read
// from, keeping the details of the documents that carry one of tags
// (every document without tags).
func (l *Library) Bundle(ctx context.Context, tags []string, publicLag time.Duration) (Bundle, error) {
	src, ok := l.tax.src.(BundleSource)
	if !ok {
		return Bundle{}, ErrNoBundleSource
	}
	s, err := l.snapshotFor(ctx, nil, publicLag)
	if err != nil {
		return Bundle{}, err
	}
	a, err := assemble(ctx, s, src, tags)
	if err != nil {
		return Bundle{}, err
	}
	p := a.page // a copy: its cursor gets the categories
	if err := l.addCategories(ctx, &p, nil); err != nil {
		return Bundle{}, err
	}
	b := Bundle{From: s, Next: p.Next, Listing: p.Documents, Details: a.details, Tags: tags, Categories: p.Categories,
		Files: a.files, FilesSize: a.filesSize}
	if b.Tags == nil {
		b.Tags = []string{}
	}
	if b.Config, err = l.settings.get(ctx, src); err != nil {
		return Bundle{}, err
	}
	b.ETag = b.etag(a.digest)
	return b, nil
}

// assembly is what a bundle holds of a snapshot, made once per stable
// point, contents and filter: a bundle request then costs a lookup, not a
// walk of the library.
type assembly struct {
	page      Page // the first sync page, unbounded, without categories
	details   []*document.Document
	files     []File
	filesSize int64
	digest    []byte // of the listed documents at their seqs, and of the files
}

func assemble(ctx context.Context, s *Snapshot, src BundleSource, tags []string) (*assembly, error) {
	v, err := s.Memo(fmt.Sprintf("bundle:%d:%s", s.Stable, strings.Join(tags, ",")), func() (any, error) {
		p := s.page(nil, len(s.bySeq)+1, math.MaxInt)
		p.Next.Floor = s.Stable
		a := &assembly{page: p, details: keepTagged(p.Documents, tags)}
		files, err := filesOf(ctx, s, src, a.details, tags)
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		var buf []byte
		for _, d := range p.Documents {
			buf = binary.BigEndian.AppendUint64(buf[:0], uint64(d.Seq))
			buf = append(append(buf, d.ID...), '\n')
			h.Write(buf)
		}
		for _, f := range files {
			h.Write(f.Record)
			a.filesSize += f.Size
		}
		a.files, a.digest = files, h.Sum(nil)
		return a, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*assembly), nil
}

// keepTagged returns the documents of ds that carry one of tags, ds itself
// without tags.
func keepTagged(ds []*document.Document, tags []string) []*document.Document {
	if len(tags) == 0 {
		return ds
	}
	var out []*document.Document
	for _, d := range ds {
		if slices.ContainsFunc(d.TagsIDs, func(t string) bool { return slices.Contains(tags, t) }) {
			out = append(out, d)
		}
	}
	return out
}

// MediaIDs returns the ids of the media d shows: its PDF file, its images.
func MediaIDs(d *document.Document) []string {
	ids := slices.Clone(d.ImagesIDs)
	if d.File != nil {
		ids = append(ids, d.File.ID)
	}
	return ids
}

// filesOf returns the records of the media ds name, asked once per
// snapshot contents and filter: a media record never changes (new bytes
// are a new media), and one a document names cannot be deleted.
func filesOf(ctx context.Context, s *Snapshot, src BundleSource, ds []*document.Document, tags []string) ([]File, error) {
	v, err := s.Memo("bundle-files:"+strings.Join(tags, ","), func() (any, error) {
		var ids []string
		for _, d := range ds {
			ids = append(ids, MediaIDs(d)...)
		}
		slices.Sort(ids)
		files, err := src.Files(ctx, slices.Compact(ids))
		if err != nil {
			return nil, err
		}
		sort.Slice(files, func(i, j int) bool { return files[i].ID < files[j].ID })
		return files, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]File), nil
}

// etag digests what the bundle's bytes are made of: the cursor (its
// stable point, floor and categories), the filter, the settings, and the
// assembly's digest of every listed document at its place in the sequence
// (the details and their related documents follow from them and the
// categories) and of the files.
func (b Bundle) etag(digest []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "bundle/1\n%s\n%q\n", b.Next, b.Tags)
	h.Write(b.Config)
	h.Write(digest)
	return `"` + hex.EncodeToString(h.Sum(nil)[:16]) + `"`
}

// ParseBundleTags reads the tag filter: ids separated by commas, at most
// MaxBundleTags, each a valid tag id.
func ParseBundleTags(raw string) ([]string, error) {
	if raw == "" {
		return nil, nil
	}
	tags := strings.Split(raw, ",")
	if len(tags) > MaxBundleTags {
		return nil, fmt.Errorf("at most %d tags (got %d)", MaxBundleTags, len(tags))
	}
	for _, t := range tags {
		if !tagID.MatchString(t) {
			return nil, fmt.Errorf("'%s' is not a tag id", t)
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags), nil
}

// tagID is the form of a tag id (CONTRACT.md §1).
var tagID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// settingsLag is how long the public settings fetched for a bundle are
// used before they are asked again.
const settingsLag = time.Second

// settings are the public settings last fetched.
type settings struct {
	mu   sync.Mutex
	body json.RawMessage
	at   time.Time
}

func (c *settings) get(ctx context.Context, src BundleSource) (json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.body != nil && time.Since(c.at) < settingsLag {
		return c.body, nil
	}
	begun := time.Now()
	body, err := src.PublicConfig(ctx)
	if err != nil {
		return nil, err
	}
	c.body, c.at = body, begun
	return body, nil
}
