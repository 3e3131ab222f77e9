// Command doclib exports a doclib installation into one archive, verifies
// an archive, and imports one into an installation, through the gateway's
// back-office API (DOCLIB_URL, the admin listener; DOCLIB_TOKEN, an editor's
// bearer token).
//
//	doclib export [-zstd] [-workers N] [-o FILE]      (stdout without -o)
//	doclib verify ARCHIVE
//	doclib import [-merge] [-workers N] ARCHIVE
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/doclib/cmd/doclib/internal/bucket"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "doclib:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  doclib export [-zstd] [-o FILE]   write the installation's archive (stdout without -o)
  doclib export [-zstd] -s3         write it to DOCLIB_BACKUP_BUCKET, keep the newest DOCLIB_BACKUP_KEEP (7)
  doclib verify ARCHIVE             check every digest and reference, import nothing
  doclib import [-merge] ARCHIVE    write the archive into the installation
  -workers N (export, import)       requests in flight at once, 1 to 32 (6)
environment: DOCLIB_URL (the gateway's admin listener), DOCLIB_TOKEN (an editor's token)`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	switch args[0] {
	case "export":
		return runExport(ctx, args[1:], stdout, log)
	case "verify":
		return runVerify(args[1:], stdout)
	case "import":
		return runImport(ctx, args[1:], stdout, log)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}

// config is the installation doclib talks to.
type config struct {
	URL   string
	Token string
}

func loadConfig() (config, error) {
	c := config{URL: os.Getenv("DOCLIB_URL"), Token: os.Getenv("DOCLIB_TOKEN")}
	var missing []string
	if c.URL == "" {
		missing = append(missing, "DOCLIB_URL")
	}
	if c.Token == "" {
		missing = append(missing, "DOCLIB_TOKEN")
	}
	if len(missing) > 0 {
		return c, fmt.Errorf("set %v", missing)
	}
	return c, nil
}

// loadBucketConfig reads the backup bucket's settings: the media service's
// S3 variables, and the bucket, prefix and number of archives to keep.
func loadBucketConfig() (bucket.Config, error) {
	c := bucket.Config{Endpoint: os.Getenv("S3_ENDPOINT"), AccessKey: os.Getenv("S3_ACCESS_KEY"), SecretKey: os.Getenv("S3_SECRET_KEY"),
		Region: envOr("S3_REGION", "us-east-1"), UseTLS: os.Getenv("S3_USE_TLS") == "true",
		Bucket: os.Getenv("DOCLIB_BACKUP_BUCKET"), Prefix: os.Getenv("DOCLIB_BACKUP_PREFIX"), Keep: 7}
	var problems []string
	for name, v := range map[string]string{"S3_ENDPOINT": c.Endpoint, "S3_ACCESS_KEY": c.AccessKey, "S3_SECRET_KEY": c.SecretKey,
		"DOCLIB_BACKUP_BUCKET": c.Bucket} {
		if v == "" {
			problems = append(problems, name+" is required")
		}
	}
	if v := os.Getenv("DOCLIB_BACKUP_KEEP"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			problems = append(problems, "DOCLIB_BACKUP_KEEP must be a number from 1")
		}
		c.Keep = n
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return c, errors.New(strings.Join(problems, "; "))
	}
	return c, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// workersFlag is -workers: how many requests export and import have in
// flight at once. A few hide the round trips; many would only load the
// services the editors use meanwhile.
func workersFlag(fs *flag.FlagSet) *int {
	return fs.Int("workers", 6, "requests in flight at once (1 to 32)")
}

func checkWorkers(n int) error {
	if n < 1 || n > 32 {
		return fmt.Errorf("-workers %d: give 1 to 32", n)
	}
	return nil
}
