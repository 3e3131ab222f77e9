package library

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/doclib/cmd/doclib/internal/archive"
)

// Counts are the numbers the manifest records, by kind.
const (
	CountCategories = "categories"
	CountTags       = "tags"
	CountDocuments  = "documents"
	CountRevisions  = "revisions"
	CountMedia      = "media"
	CountMediaBytes = "mediaBytes"
)

// Contents is what Verify learned of an archive: its header, counts, the
// ids of its records and its reference data (small: an import writes it
// before the documents and media, which come first in the archive).
type Contents struct {
	Header archive.Header
	Counts map[string]int
	IDs    map[archive.Kind]map[string]bool // by KindCategories, KindTags, KindMediaRecords, KindDocument
	Raw    map[archive.Kind][]byte          // categories, tags, settings and media records entries
	// Entries are the entries Verify read and checked, by path: a second
	// read of the archive (the import's) acts only on these.
	Entries map[string]archive.Entry
}

// Same refuses an entry that is not one Verify checked (another path, size
// or digest): the archive changed since (replaced, rewritten, truncated).
// The reader then checks the entry's bytes against that digest.
func (c Contents) Same(f *archive.File) error {
	e, ok := c.Entries[f.Path]
	if !ok || e.Size != f.Size || e.SHA256 != f.SHA256 {
		return fmt.Errorf("entry %s: not the entry verified (the archive changed since it was verified)", f.Path)
	}
	return nil
}

// index gathers the ids and references of an archive while it is read:
// ids only, never contents.
type index struct {
	categories map[string]bool
	tags       map[string]Tag
	media      map[string]Media
	files      map[string]archive.Entry
	documents  map[string]Refs
	revisions  int
	settings   bool
	raw        map[archive.Kind][]byte
}

// Verify reads the whole archive from r: the format (header first, a known
// version, safe paths, every entry's digest, the manifest last and
// complete) and the references (every tag's category, every document's
// tags, media and pinned documents, every media record's file with its
// size and digest). It returns the first format error, or every reference
// problem at once.
func Verify(r io.Reader) (Contents, error) {
	ar, err := archive.NewReader(r)
	if err != nil {
		return Contents{}, err
	}
	defer ar.Close()
	ix := &index{categories: map[string]bool{}, tags: map[string]Tag{}, media: map[string]Media{},
		files: map[string]archive.Entry{}, documents: map[string]Refs{}, raw: map[archive.Kind][]byte{}}
	for {
		f, err := ar.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Contents{}, err
		}
		if err := ix.add(f); err != nil {
			return Contents{}, err
		}
	}
	counts := ix.counts()
	if problems := ix.problems(ar.Manifest(), counts); len(problems) > 0 {
		return Contents{}, fmt.Errorf("%d reference problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	c := ix.contents(ar.Header, counts)
	c.Entries = map[string]archive.Entry{}
	for _, e := range ar.Manifest().Entries {
		c.Entries[e.Path] = e
	}
	return c, nil
}

func (ix *index) contents(h archive.Header, counts map[string]int) Contents {
	ids := map[archive.Kind]map[string]bool{archive.KindCategories: ix.categories, archive.KindTags: {},
		archive.KindMediaRecords: {}, archive.KindDocument: {}}
	for id := range ix.tags {
		ids[archive.KindTags][id] = true
	}
	for id := range ix.media {
		ids[archive.KindMediaRecords][id] = true
	}
	for id := range ix.documents {
		ids[archive.KindDocument][id] = true
	}
	return Contents{Header: h, Counts: counts, IDs: ids, Raw: ix.raw}
}

func (ix *index) add(f *archive.File) error {
	if f.Kind == archive.KindMediaFile {
		// Streamed: the reader checks the digest the entry announces; the
		// record's digest is compared with it at the end.
		if _, err := io.Copy(io.Discard, f); err != nil {
			return err
		}
		ix.files[f.ID] = archive.Entry{Path: f.Path, Size: f.Size, SHA256: f.SHA256}
		return nil
	}
	raw, err := f.Bytes()
	if err != nil {
		return err
	}
	if f.Kind != archive.KindDocument {
		ix.raw[f.Kind] = raw
	}
	if err := ix.addRecords(f, raw); err != nil {
		return fmt.Errorf("entry %s: %w", f.Path, err)
	}
	return nil
}

func (ix *index) addRecords(f *archive.File, raw []byte) error {
	switch f.Kind {
	case archive.KindCategories:
		return EachLine(raw, func(c Category) error { ix.categories[c.ID] = true; return nil })
	case archive.KindTags:
		return EachLine(raw, func(t Tag) error { ix.tags[t.ID] = t; return nil })
	case archive.KindMediaRecords:
		return EachLine(raw, func(m Media) error { ix.media[m.ID] = m; return nil })
	case archive.KindSettings:
		ix.settings = true
		if !json.Valid(raw) {
			return errors.New("not JSON")
		}
		return nil
	case archive.KindDocument:
		var d Document
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		refs, err := DocumentRefs(d.Document)
		if err != nil {
			return err
		}
		if refs.ID != f.ID {
			return fmt.Errorf("holds document %q", refs.ID)
		}
		if err := checkHistory(d); err != nil {
			return fmt.Errorf("document %s: %w", refs.ID, err)
		}
		ix.documents[refs.ID] = refs
		ix.revisions += len(d.Revisions)
	}
	return nil
}

// EachLine decodes every non-empty line of a JSON Lines entry into a T
// and calls fn with it; a record without an id is an error naming its line.
func EachLine[T interface{ Media | Tag | Category }](raw []byte, fn func(T) error) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), archive.MaxJSONEntry)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		if id := recordID(v); id == "" {
			return fmt.Errorf("line %d: a record without an id", line)
		} else if !archive.ValidID(id) {
			return fmt.Errorf("line %d: id %q is not an id (letters, digits, '.', '_', '-')", line, id)
		}
		if err := fn(v); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	return sc.Err()
}

func recordID(v any) string {
	switch v := v.(type) {
	case Media:
		return v.ID
	case Tag:
		return v.ID
	case Category:
		return v.ID
	}
	return ""
}

func (ix *index) counts() map[string]int {
	var bytes int
	for _, f := range ix.files {
		bytes += int(f.Size)
	}
	return map[string]int{CountCategories: len(ix.categories), CountTags: len(ix.tags), CountDocuments: len(ix.documents),
		CountRevisions: ix.revisions, CountMedia: len(ix.media), CountMediaBytes: bytes}
}

func (ix *index) problems(m *archive.Manifest, counts map[string]int) []string {
	var out []string
	for k, v := range counts {
		if m.Counts[k] != v {
			out = append(out, fmt.Sprintf("manifest counts %d %s, the archive holds %d", m.Counts[k], k, v))
		}
	}
	if !ix.settings {
		out = append(out, "entry "+archive.SettingsPath+" is missing")
	}
	for _, t := range ix.tags {
		if !ix.categories[t.CategoryID] {
			out = append(out, fmt.Sprintf("tag %s names category %s, not in the archive", t.ID, t.CategoryID))
		}
	}
	for _, m := range ix.media {
		f, ok := ix.files[m.ID]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("media %s: entry %s is missing", m.ID, archive.MediaEntry(m.ID)))
		case f.Size != m.Size || f.SHA256 != m.SHA256:
			out = append(out, fmt.Sprintf("entry %s: %d bytes, SHA-256 %s; its record says %d, %s", f.Path, f.Size, f.SHA256, m.Size, m.SHA256))
		}
	}
	for id := range ix.files {
		if _, ok := ix.media[id]; !ok {
			out = append(out, fmt.Sprintf("entry %s: no record in %s", archive.MediaEntry(id), archive.MediaPath))
		}
	}
	for _, d := range ix.documents {
		out = append(out, ix.documentProblems(d)...)
	}
	sort.Strings(out)
	return out
}

func (ix *index) documentProblems(d Refs) []string {
	var out []string
	for _, t := range d.Tags {
		if _, ok := ix.tags[t]; !ok {
			out = append(out, fmt.Sprintf("document %s names tag %s, not in the archive", d.ID, t))
		}
	}
	for _, m := range d.Media {
		if _, ok := ix.media[m]; !ok {
			out = append(out, fmt.Sprintf("document %s names media %s, not in the archive", d.ID, m))
		}
	}
	for _, p := range d.Documents {
		if _, ok := ix.documents[p]; !ok {
			out = append(out, fmt.Sprintf("document %s pins document %s, not in the archive", d.ID, p))
		}
	}
	return out
}

// checkHistory checks a document entry's revisions as an export writes
// them: oldest first, versions running up, the newest the document's own
// version. An entry without it restores a document whose history an
// export cannot list.
func checkHistory(d Document) error {
	var doc struct{ Version int64 }
	if err := json.Unmarshal(d.Document, &doc); err != nil {
		return err
	}
	prev := int64(0)
	for _, raw := range d.Revisions {
		var r struct{ Version int64 }
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("a revision: %w", err)
		}
		if r.Version <= prev {
			return fmt.Errorf("revision %d comes after %d (revisions run up, oldest first)", r.Version, prev)
		}
		prev = r.Version
	}
	if prev != doc.Version {
		return fmt.Errorf("its newest revision is %d, not its version %d: the entry lacks the revision of the document's current state", prev, doc.Version)
	}
	return nil
}
