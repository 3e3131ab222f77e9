// Package archive owns the doclib archive format: a tar stream, optionally
// zstd-compressed, whose first entry is header.json (format and version, so a
// reader refuses a newer archive before reading anything else) and whose last
// is manifest.json (counts and the SHA-256 of every entry, known only once
// every entry was written, since the writer streams). Each entry also carries
// its own SHA-256 in a PAX record, so a reader checks an entry as soon as it
// has read it and names it, without waiting for the manifest.
package archive

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"
)

// Format names the archive kind in header.json and manifest.json.
const Format = "doclib-archive"

// Version is the format version this code writes and the newest it reads.
const Version = 1

// Fixed entry names.
const (
	HeaderPath     = "header.json"
	ManifestPath   = "manifest.json"
	CategoriesPath = "categories.jsonl"
	TagsPath       = "tags.jsonl"
	SettingsPath   = "settings.json"
	MediaPath      = "media.jsonl"
	mediaDir       = "media/"
	documentsDir   = "documents/"
)

// paxDigest is the PAX record holding an entry's SHA-256 (hex).
const paxDigest = "DOCLIB.sha256"

// Header is header.json.
type Header struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Source    string    `json:"source"`
	StartedAt time.Time `json:"startedAt"`
}

// Entry is one file of the archive as the manifest lists it.
type Entry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest is manifest.json, the last entry.
type Manifest struct {
	Format     string         `json:"format"`
	Version    int            `json:"version"`
	Source     string         `json:"source"`
	StartedAt  time.Time      `json:"startedAt"`
	FinishedAt time.Time      `json:"finishedAt"`
	Counts     map[string]int `json:"counts"`
	Entries    []Entry        `json:"entries"`
}

// idPattern is what an id in an entry path may be: the ids the services make
// or accept (server ids, caller ids), never a path separator or a dot-dot.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// ValidID reports whether id is one an archive may hold (and an import may
// put in a URL path): what idPattern allows.
func ValidID(id string) bool { return idPattern.MatchString(id) }

// MediaEntry is the path of a media file's bytes.
func MediaEntry(id string) string { return mediaDir + id }

// DocumentEntry is the path of a document (with its revisions).
func DocumentEntry(id string) string { return documentsDir + id + ".json" }

// Kind says what an entry path holds.
type Kind int

// The kinds of entry.
const (
	KindHeader Kind = iota + 1
	KindManifest
	KindCategories
	KindTags
	KindSettings
	KindMediaRecords
	KindMediaFile
	KindDocument
)

// Classify checks p is a path this format allows and says what it holds,
// with the id for media files and documents. Anything else (absolute, with
// "..", a backslash, not clean, unknown) is refused: a reader never trusts
// a path it did not expect.
func Classify(p string) (Kind, string, error) {
	if p == "" || strings.ContainsAny(p, "\\\x00") || path.IsAbs(p) || path.Clean(p) != p {
		return 0, "", fmt.Errorf("entry path %q is not a clean relative path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || part == "." {
			return 0, "", fmt.Errorf("entry path %q leaves the archive", p)
		}
	}
	switch p {
	case HeaderPath:
		return KindHeader, "", nil
	case ManifestPath:
		return KindManifest, "", nil
	case CategoriesPath:
		return KindCategories, "", nil
	case TagsPath:
		return KindTags, "", nil
	case SettingsPath:
		return KindSettings, "", nil
	case MediaPath:
		return KindMediaRecords, "", nil
	}
	if id, ok := strings.CutPrefix(p, mediaDir); ok && idPattern.MatchString(id) {
		return KindMediaFile, id, nil
	}
	if rest, ok := strings.CutPrefix(p, documentsDir); ok {
		if id, ok := strings.CutSuffix(rest, ".json"); ok && idPattern.MatchString(id) {
			return KindDocument, id, nil
		}
	}
	return 0, "", fmt.Errorf("entry path %q is not one this format has", p)
}
