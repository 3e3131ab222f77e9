package library_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/doclib/cmd/doclib/internal/archive"
	"github.com/doclib/cmd/doclib/internal/library"
)

func digest(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// sample is a small consistent library; change lets a test break it.
type sample struct {
	categories, tags, media, settings string
	docs                              map[string]string
	files                             map[string][]byte
	counts                            map[string]int
}

func good() sample {
	pdf := []byte("%PDF-1.4 a file")
	return sample{
		categories: `{"id":"health","name":"Santé"}` + "\n",
		tags:       `{"id":"vaccines","name":"Vaccins","categoryId":"health"}` + "\n",
		media:      `{"id":"m1","size":15,"sha256":"` + digest(pdf) + `"}` + "\n",
		settings:   `{"moderatorEmail":"a@b.example"}`,
		docs: map[string]string{
			"d1": `{"document":{"id":"d1","version":1,"tagsIds":["vaccines"],"file":{"id":"m1"},"relatedIds":["d2"]},"revisions":[{"version":1}]}`,
			"d2": `{"document":{"id":"d2","tagsIds":[],"relatedIds":[],"draft":{"tagsIds":["vaccines"],"imagesIds":["m1"]}},"revisions":[]}`,
		},
		files:  map[string][]byte{"m1": pdf},
		counts: map[string]int{"categories": 1, "tags": 1, "documents": 2, "revisions": 1, "media": 1, "mediaBytes": 15},
	}
}

func (s sample) write(t *testing.T, compress bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, compress, "test", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for id, b := range s.files {
		if err := w.WriteStream(archive.MediaEntry(id), int64(len(b)), digest(b), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	for id, d := range s.docs {
		must(t, w.WriteBytes(archive.DocumentEntry(id), []byte(d)))
	}
	must(t, w.WriteBytes(archive.CategoriesPath, []byte(s.categories)))
	must(t, w.WriteBytes(archive.TagsPath, []byte(s.tags)))
	must(t, w.WriteBytes(archive.SettingsPath, []byte(s.settings)))
	must(t, w.WriteBytes(archive.MediaPath, []byte(s.media)))
	must(t, w.Close(s.counts))
	return buf.Bytes()
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestVerifyAcceptsAConsistentArchive(t *testing.T) {
	t.Parallel()
	for _, compress := range []bool{false, true} {
		got, err := library.Verify(bytes.NewReader(good().write(t, compress)))
		if err != nil {
			t.Fatalf("compress=%v: %v", compress, err)
		}
		if got.Counts["documents"] != 2 || got.Header.Source != "test" {
			t.Errorf("compress=%v: got %+v", compress, got)
		}
	}
}

func TestVerifyRefusesBrokenReferences(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(*sample)
		want   string
	}{
		{"tag missing", func(s *sample) { s.tags = ""; s.counts["tags"] = 0 }, "names tag vaccines"},
		{"category missing", func(s *sample) { s.categories = ""; s.counts["categories"] = 0 }, "tag vaccines names category health"},
		{"media record missing", func(s *sample) { s.media = ""; s.counts["media"] = 0 }, "entry media/m1: no record"},
		{"pinned document missing", func(s *sample) {
			delete(s.docs, "d2")
			s.counts["documents"] = 1
		}, "pins document d2"},
		{"media digest mismatch", func(s *sample) {
			s.media = `{"id":"m1","size":15,"sha256":"` + strings.Repeat("0", 64) + `"}` + "\n"
		}, "entry media/m1: 15 bytes"},
		{"counts differ", func(s *sample) { s.counts["documents"] = 3 }, "manifest counts 3 documents"},
		// An export lists a document's history down from its version: an
		// entry without that revision restores a document it cannot list.
		{"newest revision missing", func(s *sample) {
			s.docs["d1"] = strings.Replace(s.docs["d1"], `"version":1,`, `"version":2,`, 1)
		}, "document d1: its newest revision is 1, not its version 2"},
		{"revisions out of order", func(s *sample) {
			s.docs["d1"] = strings.Replace(s.docs["d1"], `"revisions":[{"version":1}]`, `"revisions":[{"version":1},{"version":1}]`, 1)
			s.counts["revisions"] = 2
		}, "document d1: revision 1 comes after 1"},
		// An id goes into an import URL: one that is not an id is refused.
		{"category id not an id", func(s *sample) {
			s.categories += `{"id":"../../documents/x","name":"Evil"}` + "\n"
			s.counts["categories"] = 2
		}, `entry categories.jsonl: line 2: id "../../documents/x" is not an id`},
		{"tag id not an id", func(s *sample) {
			s.tags += `{"id":"a?b","name":"Evil","categoryId":"health"}` + "\n"
			s.counts["tags"] = 2
		}, `line 2: id "a?b" is not an id`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := good()
			tc.change(&s)
			_, err := library.Verify(bytes.NewReader(s.write(t, false)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

func TestVerifyRefusesDamagedArchives(t *testing.T) {
	t.Parallel()
	plain := good().write(t, false)
	zst := good().write(t, true)
	changed := bytes.Clone(plain)
	i := bytes.Index(changed, []byte(`"Vaccins"`))
	changed[i+1] = 'W'
	cases := []struct {
		name string
		raw  []byte
		want string
	}{
		{"truncated in an entry", plain[:len(plain)/2], "truncated"},
		{"truncated before the manifest", cutBefore(t, plain, archive.ManifestPath), "without manifest.json"},
		{"truncated zstd", zst[:len(zst)-40], ""},
		{"a changed byte", changed, "entry tags.jsonl: SHA-256"},
		{"empty", nil, "empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := library.Verify(bytes.NewReader(tc.raw))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
		})
	}
}

// cutBefore returns the archive up to the tar header of the last entry
// (the manifest): its PAX header is the last one in the stream.
func cutBefore(t *testing.T, raw []byte, p string) []byte {
	t.Helper()
	if !bytes.Contains(raw, []byte(p)) {
		t.Fatalf("no entry %s", p)
	}
	i := bytes.LastIndex(raw, []byte("PaxHeaders"))
	if i < 0 {
		t.Fatal("no PAX header")
	}
	return raw[:i-i%512]
}
