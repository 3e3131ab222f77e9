package archive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Writer streams an archive: header first, entries as they come, manifest
// last. It keeps only the list of entries (path, size, digest) in memory.
type Writer struct {
	tw      *tar.Writer
	zw      *zstd.Encoder // nil when not compressed
	header  Header
	entries []Entry
	seen    map[string]bool
	now     func() time.Time
}

// NewWriter starts an archive on w (zstd-compressed when compress) and
// writes its header.
func NewWriter(w io.Writer, compress bool, source string, now func() time.Time) (*Writer, error) {
	aw := &Writer{seen: map[string]bool{}, now: now}
	if compress {
		// One encoder: by default there is one per CPU, each with its
		// window's buffers, memory the stream does not need to stay fast
		// (the network, not the CPU, is the limit).
		zw, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return nil, fmt.Errorf("start zstd: %w", err)
		}
		aw.zw, w = zw, zw
	}
	aw.tw = tar.NewWriter(w)
	aw.header = Header{Format: Format, Version: Version, Source: source, StartedAt: now().UTC()}
	raw, err := json.Marshal(aw.header)
	if err != nil {
		return nil, err
	}
	if err := aw.WriteBytes(HeaderPath, raw); err != nil {
		return nil, err
	}
	return aw, nil
}

// WriteBytes writes a small entry held in memory.
func (w *Writer) WriteBytes(p string, b []byte) error {
	if len(b) > MaxJSONEntry { // a reader refuses it: the export would not verify
		return fmt.Errorf("entry %s: %d bytes, more than the %d a record entry may have", p, len(b), MaxJSONEntry)
	}
	sum := sha256.Sum256(b)
	return w.write(p, int64(len(b)), hex.EncodeToString(sum[:]), bytes.NewReader(b))
}

// WriteStream writes an entry of exactly size bytes read from r, whose
// SHA-256 must be digest (hex): a tar header carries size and the PAX
// digest before the bytes, so both must be known first (a media record
// gives them). A stream of another length or digest is an error naming the
// entry; the archive is then unusable (the caller removes it).
func (w *Writer) WriteStream(p string, size int64, digest string, r io.Reader) error {
	h := sha256.New()
	err := w.write(p, size, digest, io.TeeReader(r, h))
	if err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != digest {
		return fmt.Errorf("entry %s: its bytes have SHA-256 %s, not %s", p, got, digest)
	}
	return nil
}

func (w *Writer) write(p string, size int64, digest string, r io.Reader) error {
	kind, _, err := Classify(p)
	if err != nil {
		return err
	}
	if w.seen[p] {
		return fmt.Errorf("entry %s: written twice", p)
	}
	if kind == KindManifest && w.seen[ManifestPath] {
		return errors.New("manifest already written")
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: p, Size: size, Mode: 0o644, ModTime: w.header.StartedAt,
		Format: tar.FormatPAX, PAXRecords: map[string]string{paxDigest: digest}}
	if err := w.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("entry %s: %w", p, err)
	}
	n, err := io.Copy(w.tw, r)
	if err != nil {
		return fmt.Errorf("entry %s: %w", p, err)
	}
	if n != size {
		return fmt.Errorf("entry %s: %d bytes, %d announced", p, n, size)
	}
	w.seen[p] = true
	if kind != KindManifest {
		w.entries = append(w.entries, Entry{Path: p, Size: size, SHA256: digest})
	}
	return nil
}

// Written reports whether the entry p is already in the archive.
func (w *Writer) Written(p string) bool { return w.seen[p] }

// Close writes the manifest with counts and ends the stream. Without Close
// the archive has no manifest and every reader refuses it as truncated.
func (w *Writer) Close(counts map[string]int) error {
	m := Manifest{Format: Format, Version: Version, Source: w.header.Source, StartedAt: w.header.StartedAt,
		FinishedAt: w.now().UTC(), Counts: counts, Entries: w.entries}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := w.WriteBytes(ManifestPath, raw); err != nil {
		return err
	}
	if err := w.tw.Close(); err != nil {
		return err
	}
	if w.zw != nil {
		return w.zw.Close()
	}
	return nil
}
