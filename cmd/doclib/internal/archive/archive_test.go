package archive_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/doclib/cmd/doclib/internal/archive"
)

func TestClassifyRefusesUnsafePaths(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"", "/etc/passwd", "../x", "media/../../x", "media/..", "documents/../header.json",
		"./header.json", "media//x", `media\x`, "media/x/y", "documents/x", "other.json", "media/.hidden", "media/"} {
		if _, _, err := archive.Classify(p); err == nil {
			t.Errorf("Classify(%q) accepted", p)
		}
	}
	for _, p := range []string{"header.json", "media/abc_D-1", "documents/q7GmT0xW4rJd1sVb9LcE2A.json", "tags.jsonl"} {
		if _, _, err := archive.Classify(p); err != nil {
			t.Errorf("Classify(%q): %v", p, err)
		}
	}
}

// rawTar writes entries as given (name, content, digest header), for
// archives a Writer would never make.
func rawTar(t *testing.T, entries ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		sum := sha256.Sum256([]byte(e[1]))
		hdr := &tar.Header{Typeflag: tar.TypeReg, Name: e[0], Size: int64(len(e[1])), Mode: 0o644, Format: tar.FormatPAX,
			PAXRecords: map[string]string{"DOCLIB.sha256": hex.EncodeToString(sum[:])}}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

const header = `{"format":"doclib-archive","version":1,"source":"t"}`

func readAll(raw []byte) error {
	r, err := archive.NewReader(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, f); err != nil {
			return err
		}
	}
}

func TestReaderRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		raw  []byte
		want string
	}{
		{"newer version", rawTar(t, [2]string{"header.json", `{"format":"doclib-archive","version":2}`}), "format version 2 is newer"},
		{"another format", rawTar(t, [2]string{"header.json", `{"format":"zip","version":1}`}), `format "zip"`},
		{"header not first", rawTar(t, [2]string{"tags.jsonl", ""}, [2]string{"header.json", header}), "first entry must be header.json"},
		{"dot-dot", rawTar(t, [2]string{"header.json", header}, [2]string{"media/../../evil", "x"}), `"media/../../evil"`},
		{"absolute", rawTar(t, [2]string{"header.json", header}, [2]string{"/tmp/evil", "x"}), `"/tmp/evil"`},
		{"twice", rawTar(t, [2]string{"header.json", header}, [2]string{"tags.jsonl", ""}, [2]string{"tags.jsonl", ""}), "entry tags.jsonl: appears twice"},
		{"no manifest", rawTar(t, [2]string{"header.json", header}, [2]string{"tags.jsonl", ""}), "after entry tags.jsonl without manifest.json"},
		{"manifest not last", rawTar(t, [2]string{"header.json", header},
			[2]string{"manifest.json", `{"format":"doclib-archive","version":1}`}, [2]string{"tags.jsonl", ""}), "entry tags.jsonl: after manifest.json"},
		{"entry missing from manifest", rawTar(t, [2]string{"header.json", header}, [2]string{"tags.jsonl", ""},
			[2]string{"manifest.json", `{"format":"doclib-archive","version":1}`}), "not in the manifest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := readAll(tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestWriterRefusesAStreamOfAnotherDigest(t *testing.T) {
	t.Parallel()
	w, err := archive.NewWriter(io.Discard, false, "t", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	err = w.WriteStream("media/m1", 3, strings.Repeat("0", 64), strings.NewReader("abc"))
	if err == nil || !strings.Contains(err.Error(), "entry media/m1") {
		t.Fatalf("want an error naming media/m1, got %v", err)
	}
	err = w.WriteStream("media/m2", 4, strings.Repeat("0", 64), strings.NewReader("abc"))
	if err == nil || !strings.Contains(err.Error(), "media/m2") {
		t.Fatalf("want a short stream refused, got %v", err)
	}
}

// FuzzReader: whatever the bytes, the reader never panics and never hands
// out an entry whose path is not clean, relative and inside the archive.
func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := archive.NewWriter(&buf, false, "seed", time.Now)
	_ = w.WriteBytes("tags.jsonl", []byte(`{"id":"a","categoryId":"b"}`))
	_ = w.WriteStream("media/m1", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", strings.NewReader("abc"))
	_ = w.Close(nil)
	f.Add(buf.Bytes())
	f.Add(rawTar(&testing.T{}, [2]string{"header.json", header}, [2]string{"../x", "y"}))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := archive.NewReader(bytes.NewReader(raw))
		if err != nil {
			return
		}
		defer r.Close()
		for i := 0; i < 1000; i++ {
			e, err := r.Next()
			if err != nil {
				return
			}
			if path.IsAbs(e.Path) || path.Clean(e.Path) != e.Path || strings.Contains(e.Path, "..") && e.Kind != archive.KindMediaFile && e.Kind != archive.KindDocument {
				t.Fatalf("unsafe path %q handed out", e.Path)
			}
			for _, part := range strings.Split(e.Path, "/") {
				if part == ".." || part == "." || part == "" {
					t.Fatalf("unsafe path %q handed out", e.Path)
				}
			}
			_, _ = io.Copy(io.Discard, e)
		}
	})
}

// TestReaderRefusesAHugeZstdWindow: a frame declaring a 256 MiB window (the
// library's own cap is 512 MiB) is refused with an error saying why.
func TestReaderRefusesAHugeZstdWindow(t *testing.T) {
	t.Parallel()
	// magic, frame header descriptor (no single segment: a window
	// descriptor follows), window descriptor exponent 18 (2^28 bytes), then
	// a last raw block of 1 byte.
	raw := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 18 << 3, 0x09, 0x00, 0x00, 'x'}
	err := readAll(raw)
	if err == nil || !strings.Contains(err.Error(), "zstd frames need more than") {
		t.Fatalf("want the window refused, got %v", err)
	}
}

// TestWriterRefusesAnEntryNoReaderTakes: an export fails loudly rather
// than write an archive that would not verify.
func TestWriterRefusesAnEntryNoReaderTakes(t *testing.T) {
	t.Parallel()
	w, err := archive.NewWriter(io.Discard, false, "t", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	err = w.WriteBytes("documents/d1.json", make([]byte, archive.MaxJSONEntry+1))
	if err == nil || !strings.Contains(err.Error(), "entry documents/d1.json") {
		t.Fatalf("want the entry refused, got %v", err)
	}
}
