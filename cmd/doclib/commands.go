package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/doclib/cmd/doclib/internal/bucket"
	"github.com/doclib/cmd/doclib/internal/client"
	"github.com/doclib/cmd/doclib/internal/export"
	"github.com/doclib/cmd/doclib/internal/library"
	"github.com/doclib/cmd/doclib/internal/restore"
)

func runExport(ctx context.Context, args []string, stdout io.Writer, log *slog.Logger) error {
	fs := newFlags("export")
	zstd := fs.Bool("zstd", false, "compress with zstd")
	out := fs.String("o", "-", "the archive file")
	toBucket := fs.Bool("s3", false, "write to the S3 bucket DOCLIB_BACKUP_BUCKET and keep the newest DOCLIB_BACKUP_KEEP")
	workers := workersFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkWorkers(*workers); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	c := client.New(cfg.URL, cfg.Token)
	if *toBucket {
		return exportToBucket(ctx, c, *zstd, cfg.URL, *workers, stdout, log)
	}
	if *out == "-" {
		return export.Run(ctx, c, stdout, *zstd, cfg.URL, *workers, log)
	}
	return writeAtomically(*out, func(w io.Writer) error { return export.Run(ctx, c, w, *zstd, cfg.URL, *workers, log) })
}

// exportToBucket streams the archive into the backup bucket, then removes
// all but the newest archives there.
func exportToBucket(ctx context.Context, c *client.Client, zstd bool, source string, workers int, stdout io.Writer, log *slog.Logger) error {
	bc, err := loadBucketConfig()
	if err != nil {
		return err
	}
	store, err := bucket.Open(ctx, bc)
	if err != nil {
		return err
	}
	name := store.Name(time.Now(), zstd)
	if err := store.Write(ctx, name, func(w io.Writer) error { return export.Run(ctx, c, w, zstd, source, workers, log) }); err != nil {
		return fmt.Errorf("export to s3://%s/%s: %w", bc.Bucket, name, err)
	}
	fmt.Fprintf(stdout, "wrote s3://%s/%s\n", bc.Bucket, name)
	prune(ctx, store, bc, stdout, log)
	return nil
}

// prune removes all but the newest archives. Its failure (a bucket whose
// object lock refuses deletions, a policy without DeleteObject) is only a
// warning: the archive is written, and a failed run would make the
// CronJob run again and write one more archive each time.
func prune(ctx context.Context, store interface {
	Prune(context.Context) ([]string, error)
}, bc bucket.Config, stdout io.Writer, log *slog.Logger) {
	removed, err := store.Prune(ctx)
	for _, r := range removed {
		fmt.Fprintf(stdout, "removed s3://%s/%s (keeping the newest %d)\n", bc.Bucket, r, bc.Keep)
	}
	if err != nil {
		log.Warn("the archive is written, but older archives were not all removed; the next run tries again",
			"bucket", bc.Bucket, "keep", bc.Keep, "error", err)
	}
}

// writeAtomically writes FILE.partial and renames it FILE once complete:
// an export killed mid-way never leaves a file under the name asked for.
func writeAtomically(name string, write func(io.Writer) error) (err error) {
	tmp := name + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(name)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func runVerify(args []string, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: doclib verify ARCHIVE")
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	got, err := library.Verify(f)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	fmt.Fprintf(stdout, "%s: ok (format %d, from %s, started %s)\n", args[0], got.Header.Version, got.Header.Source,
		got.Header.StartedAt.Format("2006-01-02T15:04:05Z"))
	keys := make([]string, 0, len(got.Counts))
	for k := range got.Counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(stdout, "  %-11s %d\n", k, got.Counts[k])
	}
	return nil
}

func runImport(ctx context.Context, args []string, stdout io.Writer, log *slog.Logger) error {
	fs := newFlags("import")
	merge := fs.Bool("merge", false, "add to a non-empty installation (records there stay as they are)")
	workers := workersFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkWorkers(*workers); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: doclib import [-merge] [-workers N] ARCHIVE (a file: it is read twice, verified first)")
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	res, err := restore.Run(ctx, client.New(cfg.URL, cfg.Token), fs.Arg(0), *merge, *workers, log)
	for _, kind := range []string{"category", "tag", "media", "document"} {
		fmt.Fprintf(stdout, "%-9s created %d, unchanged %d, kept %d\n", kind, res.Created[kind], res.Unchanged[kind], res.Kept[kind])
	}
	// Their routes answer the same whether they wrote or found the record.
	fmt.Fprintf(stdout, "%-9s written %d (or already there), kept %d\n", "revision", res.Unchanged["revision"], res.Kept["revision"])
	fmt.Fprintf(stdout, "%-9s written %d\n", "settings", res.Unchanged["settings"])
	sort.Strings(res.KeptIDs) // documents are imported concurrently: their order is not the archive's
	for _, id := range res.KeptIDs {
		fmt.Fprintf(stdout, "kept (the installation's differs): %s\n", id)
	}
	return importStopped(err)
}

// importStopped says what to do after an import that stopped, by cause:
// only a transient failure (a service or MinIO down) is finished by
// running the same import again.
func importStopped(err error) error {
	switch {
	case err == nil, errors.Is(err, restore.ErrRefused):
		return err
	case errors.Is(err, restore.ErrTooLarge):
		return fmt.Errorf("import stopped; run again, it stops at the same entry until the installation takes it: %w", err)
	case errors.Is(err, restore.ErrConflict):
		return fmt.Errorf("import stopped; run again, it stops at the same record: rename one side, or add the archive with -merge: %w", err)
	}
	return fmt.Errorf("import stopped, run it again to finish: %w", err)
}
