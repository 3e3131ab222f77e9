// Package restore writes an archive into an installation through the
// import routes (PUT /bo/import/...), after library.Verify read the whole
// archive once: an archive that is truncated, changed or inconsistent is
// refused before anything is written. Every route is idempotent (the same
// record again changes nothing), so an interrupted import is run again and
// finishes; nothing else is needed to resume.
//
// Order: categories, tags and settings first (from the verified reference
// data), then the archive's entries as they come: each media file (record
// and bytes) and each document (its revisions, then itself), since the
// reference data comes last in the archive but must exist before the
// documents that name it.
package restore

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"

	"github.com/doclib/cmd/doclib/internal/archive"
	"github.com/doclib/cmd/doclib/internal/client"
	"github.com/doclib/cmd/doclib/internal/library"
)

// ErrRefused marks an import refused before it wrote anything (an archive
// that does not verify, an installation that is not empty).
var ErrRefused = errors.New("nothing was imported")

// ErrTooLarge and ErrConflict mark an import stopped at a record that the
// same run again would stop at too: larger than the installation takes
// (until its limit is raised), or held otherwise by it (without -merge).
var (
	ErrTooLarge = errors.New("larger than the installation takes")
	ErrConflict = errors.New("the installation has it otherwise")
)

// Result counts what an import did, by kind: created, unchanged (already
// there, the same), kept (there, different: the target's stays; --merge).
type Result struct {
	Created, Unchanged, Kept map[string]int
	KeptIDs                  []string
}

func (r *Result) count(kind string, status int, conflict bool, id string) {
	switch {
	case conflict:
		r.Kept[kind]++
		r.KeptIDs = append(r.KeptIDs, kind+" "+id)
	case status == http.StatusCreated:
		r.Created[kind]++
	default:
		r.Unchanged[kind]++
	}
}

// Importer writes one archive.
type Importer struct {
	c       *client.Client
	log     *slog.Logger
	merge   bool
	workers int // requests in flight at once
	// entryLimit: a document entry up to it goes in one request
	// (maxEntryBody; tests lower it to take the other path).
	entryLimit int
	mu         sync.Mutex // result: requests run concurrently
	result     Result
}

// countRevisions counts n revisions written (or already there) with their
// document's entry.
func (in *Importer) countRevisions(n int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.result.Unchanged["revision"] += n
}

func (in *Importer) count(kind string, status int, conflict bool, id string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.result.count(kind, status, conflict, id)
}

// Run imports the archive file path into the installation c reaches.
// Without merge, an installation holding any record the archive does not
// is refused (it is not empty, nor an earlier run of this import).
func Run(ctx context.Context, c *client.Client, path string, merge bool, workers int, log *slog.Logger) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	return run(ctx, c, f, path, merge, workers, log)
}

// run reads r twice, verifying it first, then importing only the entries
// verified: the same file (one descriptor, rewound), and an entry changed
// in between is refused before it is acted on.
func run(ctx context.Context, c *client.Client, r io.ReadSeeker, name string, merge bool, workers int, log *slog.Logger) (Result, error) {
	in := &Importer{c: c, log: log, merge: merge, workers: workers, entryLimit: maxEntryBody,
		result: Result{Created: map[string]int{}, Unchanged: map[string]int{}, Kept: map[string]int{}}}
	contents, err := library.Verify(bufio.NewReaderSize(r, 1<<20))
	if err != nil {
		return in.result, fmt.Errorf("%s does not verify, %w: %w", name, ErrRefused, err)
	}
	if !merge {
		if err := in.checkEmpty(ctx, contents); err != nil {
			return in.result, err
		}
	}
	if err := in.referenceData(ctx, contents); err != nil {
		return in.result, err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return in.result, fmt.Errorf("%s: %w", name, err)
	}
	ar, err := archive.NewReader(bufio.NewReaderSize(r, 1<<20))
	if err != nil {
		return in.result, fmt.Errorf("%s: %w", name, err)
	}
	defer ar.Close()
	err = in.entries(ctx, ar, contents)
	return in.result, err
}

// checkEmpty refuses an installation holding a record the archive does not
// hold: records of the archive itself are an earlier, interrupted run.
func (in *Importer) checkEmpty(ctx context.Context, contents library.Contents) error {
	var foreign []string
	for _, l := range []struct {
		path string
		kind archive.Kind
		name string
	}{{"/bo/documents", archive.KindDocument, "document"}, {"/bo/medias", archive.KindMediaRecords, "media"}} {
		raw, err := in.c.Get(ctx, l.path)
		if err != nil {
			return err
		}
		var list []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("GET %s: %w", l.path, err)
		}
		for _, r := range list {
			if !contents.IDs[l.kind][r.ID] {
				foreign = append(foreign, l.name+" "+r.ID)
			}
		}
	}
	cats, err := in.c.Get(ctx, "/bo/tags-categories")
	if err != nil {
		return err
	}
	var list []struct {
		ID   string `json:"id"`
		Tags []struct {
			ID string `json:"id"`
		} `json:"tags"`
	}
	if err := json.Unmarshal(cats, &list); err != nil {
		return fmt.Errorf("GET /bo/tags-categories: %w", err)
	}
	for _, c := range list {
		if !contents.IDs[archive.KindCategories][c.ID] {
			foreign = append(foreign, "category "+c.ID)
		}
		for _, t := range c.Tags {
			if !contents.IDs[archive.KindTags][t.ID] {
				foreign = append(foreign, "tag "+t.ID)
			}
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return fmt.Errorf("the installation is not empty (%d records not in the archive, e.g. %s), %w: use -merge to add the archive to it", len(foreign), foreign[0], ErrRefused)
	}
	return nil
}
