package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/klauspost/compress/zstd"
)

// MaxJSONEntry bounds an entry a reader holds in memory (every entry but a
// media file's bytes, which are streamed).
const MaxJSONEntry = 64 << 20

// maxWindow bounds the memory the zstd decoder may take for its window: a
// frame may declare up to 3.75 TiB, which the decoder would try to
// allocate. The writer's frames use 8 MiB (zstd's default level).
const maxWindow = 32 << 20

// zstdMagic starts every zstd frame.
var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// Reader reads an archive entry by entry, checking each entry's path,
// digest and size as it goes and, at the end, that the manifest lists
// exactly the entries read. Next returns io.EOF only once all of that held:
// any other end (a truncated stream, no manifest) is an error.
type Reader struct {
	tr       *tar.Reader
	zr       *zstd.Decoder
	Header   Header
	manifest *Manifest
	read     []Entry
	seen     map[string]bool
	cur      *File
}

// File is one entry being read. Reading it to the end checks its digest:
// the last Read returns an error naming the entry instead of io.EOF when
// the bytes are not the ones the archive announced.
type File struct {
	Path   string
	Kind   Kind
	ID     string // the media or document id
	Size   int64
	SHA256 string
	r      io.Reader
	h      hash.Hash
	n      int64
	done   bool
	err    error
}

func (f *File) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.r.Read(p)
	f.h.Write(p[:n])
	f.n += int64(n)
	if errors.Is(err, io.EOF) {
		f.done = true
		if f.n != f.Size {
			f.err = fmt.Errorf("entry %s: truncated (%d of %d bytes)", f.Path, f.n, f.Size)
		} else if got := hex.EncodeToString(f.h.Sum(nil)); got != f.SHA256 {
			f.err = fmt.Errorf("entry %s: SHA-256 %s, the archive says %s (changed bytes)", f.Path, got, f.SHA256)
		}
		if f.err != nil {
			return n, f.err
		}
	} else if err != nil {
		f.err = fmt.Errorf("entry %s: %w", f.Path, truncated(err))
		return n, f.err
	}
	return n, err
}

// Err is the error reading the entry met (a changed byte, a truncation).
func (f *File) Err() error { return f.err }

// Bytes reads the whole (small) entry, checked.
func (f *File) Bytes() ([]byte, error) {
	if f.Size > MaxJSONEntry {
		return nil, fmt.Errorf("entry %s: %d bytes, more than the %d a record entry may have", f.Path, f.Size, MaxJSONEntry)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// NewReader starts reading an archive from r, compressed or not, and reads
// its header: an archive of another format or a newer version is refused
// here, before anything else is read.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	ar := &Reader{seen: map[string]bool{}}
	var src io.Reader = br
	if magic, _ := br.Peek(len(zstdMagic)); bytes.Equal(magic, zstdMagic) {
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxWindow(maxWindow), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, fmt.Errorf("start zstd: %w", err)
		}
		ar.zr, src = zr, zr
	}
	ar.tr = tar.NewReader(src)
	f, err := ar.next()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("the archive is empty (no header.json)")
	}
	if err != nil {
		return nil, err
	}
	if f.Kind != KindHeader {
		return nil, fmt.Errorf("entry %s: the first entry must be %s", f.Path, HeaderPath)
	}
	raw, err := f.Bytes()
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &ar.Header); err != nil {
		return nil, fmt.Errorf("entry %s: %w", HeaderPath, err)
	}
	if err := checkVersion(ar.Header.Format, ar.Header.Version); err != nil {
		return nil, fmt.Errorf("entry %s: %w", HeaderPath, err)
	}
	return ar, nil
}

func checkVersion(format string, version int) error {
	switch {
	case format != Format:
		return fmt.Errorf("format %q is not %q", format, Format)
	case version > Version:
		return fmt.Errorf("format version %d is newer than this doclib reads (%d): use a newer doclib", version, Version)
	case version < 1:
		return fmt.Errorf("format version %d is not valid", version)
	}
	return nil
}

// Close releases the decompressor.
func (r *Reader) Close() {
	if r.zr != nil {
		r.zr.Close()
	}
}

// Manifest is the manifest, once Next returned io.EOF.
func (r *Reader) Manifest() *Manifest { return r.manifest }

// Next returns the next entry (the header and the manifest are not
// returned). It first reads what is left of the current entry, so an entry
// the caller skipped is checked too.
func (r *Reader) Next() (*File, error) {
	for {
		f, err := r.next()
		if errors.Is(err, io.EOF) {
			return nil, r.end()
		}
		if err != nil {
			return nil, err
		}
		if r.manifest != nil {
			return nil, fmt.Errorf("entry %s: after %s, which must be last", f.Path, ManifestPath)
		}
		switch f.Kind {
		case KindHeader:
			return nil, fmt.Errorf("entry %s: a second header", f.Path)
		case KindManifest:
			if err := r.readManifest(f); err != nil {
				return nil, err
			}
			continue
		}
		return f, nil
	}
}

func (r *Reader) next() (*File, error) {
	if err := r.finishCurrent(); err != nil {
		return nil, err
	}
	hdr, err := r.tr.Next()
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("after entry %s: %w", r.lastPath(), truncated(err))
	}
	kind, id, err := Classify(hdr.Name)
	if err != nil {
		return nil, err
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("entry %s: not a regular file (tar type %q)", hdr.Name, hdr.Typeflag)
	}
	if r.seen[hdr.Name] {
		return nil, fmt.Errorf("entry %s: appears twice", hdr.Name)
	}
	digest := hdr.PAXRecords[paxDigest]
	if len(digest) != 64 {
		return nil, fmt.Errorf("entry %s: no SHA-256 in its header", hdr.Name)
	}
	r.seen[hdr.Name] = true
	r.cur = &File{Path: hdr.Name, Kind: kind, ID: id, Size: hdr.Size, SHA256: digest, r: r.tr, h: sha256.New()}
	if kind != KindManifest {
		r.read = append(r.read, Entry{Path: hdr.Name, Size: hdr.Size, SHA256: digest})
	}
	return r.cur, nil
}

func (r *Reader) lastPath() string {
	if r.cur == nil {
		return "(start)"
	}
	return r.cur.Path
}

// finishCurrent reads the rest of the current entry, checking it.
func (r *Reader) finishCurrent() error {
	if r.cur == nil || r.cur.done {
		if r.cur != nil {
			return r.cur.err
		}
		return nil
	}
	_, err := io.Copy(io.Discard, r.cur)
	return err
}

func (r *Reader) readManifest(f *File) error {
	raw, err := f.Bytes()
	if err != nil {
		return err
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("entry %s: %w", ManifestPath, err)
	}
	if err := checkVersion(m.Format, m.Version); err != nil {
		return fmt.Errorf("entry %s: %w", ManifestPath, err)
	}
	r.manifest = &m
	return nil
}

// end checks, at the end of the stream, that the manifest came and lists
// exactly the entries read, with their sizes and digests.
func (r *Reader) end() error {
	if r.manifest == nil {
		return fmt.Errorf("the archive ends after entry %s without %s: truncated (an export that did not finish)", r.lastPath(), ManifestPath)
	}
	want := map[string]Entry{}
	for _, e := range r.manifest.Entries {
		want[e.Path] = e
	}
	for _, e := range r.read {
		m, ok := want[e.Path]
		switch {
		case !ok:
			return fmt.Errorf("entry %s: not in the manifest", e.Path)
		case m != e:
			return fmt.Errorf("entry %s: the manifest says %d bytes, SHA-256 %s; the entry has %d, %s", e.Path, m.Size, m.SHA256, e.Size, e.SHA256)
		}
		delete(want, e.Path)
	}
	for p := range want {
		return fmt.Errorf("entry %s: in the manifest but not in the archive", p)
	}
	return io.EOF
}

// truncated names an unexpected end plainly.
func truncated(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("the archive is truncated: %w", err)
	}
	if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return fmt.Errorf("the archive's zstd frames need more than the %d MiB of memory doclib allows (not an archive doclib wrote): %w",
			maxWindow>>20, err)
	}
	return err
}
