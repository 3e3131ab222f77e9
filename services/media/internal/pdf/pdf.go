// Package pdf reads untrusted PDF files with poppler's command-line tools
// (pdfinfo, pdftoppm, pdftotext), each run in a sandbox bounded in memory,
// CPU and wall time (package sandbox): the page count and first page's
// size, the first page as a PNG of a given size, and the text. A PDF that
// is malformed, encrypted or built to exhaust the parser is an *Error, and
// never more than one failed run.
package pdf

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/doclib/services/media/internal/sandbox"
)

// Tools are the poppler-utils programs the Reader runs.
var Tools = []string{"pdfinfo", "pdftoppm", "pdftotext"}

// Available reports whether every tool is installed.
func Available() error {
	for _, t := range Tools {
		if _, err := exec.LookPath(t); err != nil {
			return fmt.Errorf("%s not found (Debian package poppler-utils): %w", t, err)
		}
	}
	return nil
}

// Config bounds the reading of one PDF.
type Config struct {
	Memory   int64         // address space of a run, bytes
	CPU      time.Duration // CPU time of a run
	Timeout  time.Duration // wall time of a run
	MaxPages int           // pages whose text is extracted
	MaxText  int64         // bytes of text
}

// Defaults of Config.
const (
	DefaultMemory   = 1 << 30
	DefaultCPU      = 20 * time.Second
	DefaultTimeout  = 30 * time.Second
	DefaultMaxPages = 2000
	DefaultMaxText  = 32 << 20
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Memory <= 0 {
		c.Memory = DefaultMemory
	}
	if c.CPU <= 0 {
		c.CPU = DefaultCPU
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxPages <= 0 {
		c.MaxPages = DefaultMaxPages
	}
	if c.MaxText <= 0 {
		c.MaxText = DefaultMaxText
	}
	return c
}

// Error says why a PDF cannot be read.
type Error struct{ Reason string }

func (e *Error) Error() string { return "pdf: " + e.Reason }

// NotRenderable is the reason, for package rendition.
func (e *Error) NotRenderable() string { return e.Reason }

// Info is what a PDF says of itself: its page count and its first page's
// size in points (1/72 inch), as displayed (its rotation applied).
type Info struct {
	Pages         int
	Width, Height float64
}

// Reader reads PDF files from disk.
type Reader struct{ cfg Config }

// NewReader returns a Reader; zero fields of cfg take their defaults.
func NewReader(cfg Config) *Reader { return &Reader{cfg: cfg.WithDefaults()} }

// maxSmallOutput bounds what pdfinfo writes.
const maxSmallOutput = 64 << 10

func (r *Reader) run(ctx context.Context, output int64, tool string, args ...string) ([]byte, error) {
	lim := sandbox.Limits{Memory: r.cfg.Memory, CPU: r.cfg.CPU, Timeout: r.cfg.Timeout, Output: output}
	out, err := sandbox.Run(ctx, lim, tool, args...)
	var f *sandbox.Failure
	if errors.As(err, &f) {
		if strings.Contains(f.Stderr, "Incorrect password") {
			return nil, &Error{Reason: "the PDF is encrypted"}
		}
		if strings.Contains(f.Stderr, "Syntax Error") || strings.Contains(f.Stderr, "May not be a PDF file") {
			return nil, &Error{Reason: "the file is not a readable PDF"}
		}
		return nil, &Error{Reason: f.Reason}
	}
	return out, err
}

// Info reads the page count and the first page's size of the PDF at path.
func (r *Reader) Info(ctx context.Context, path string) (Info, error) {
	out, err := r.run(ctx, maxSmallOutput, "pdfinfo", "-f", "1", "-l", "1", path)
	if err != nil {
		return Info{}, err
	}
	return parseInfo(out)
}

// PageSize is the first page's size in points (rendition.PDFReader).
func (r *Reader) PageSize(ctx context.Context, path string) (float64, float64, error) {
	in, err := r.Info(ctx, path)
	return in.Width, in.Height, err
}

// Inspect is Info for media.PDFInspector.
func (r *Reader) Inspect(ctx context.Context, path string) (int, float64, float64, error) {
	in, err := r.Info(ctx, path)
	return in.Pages, in.Width, in.Height, err
}

func parseInfo(out []byte) (Info, error) {
	var (
		in  Info
		rot int
	)
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key = strings.Join(strings.Fields(key), " "); key {
		case "Pages":
			in.Pages, _ = strconv.Atoi(val)
		case "Page 1 size":
			f := strings.Fields(val) // "612 x 792 pts (letter)"
			if len(f) >= 3 && f[1] == "x" {
				in.Width, _ = strconv.ParseFloat(f[0], 64)
				in.Height, _ = strconv.ParseFloat(f[2], 64)
			}
		case "Page 1 rot":
			rot, _ = strconv.Atoi(val)
		}
	}
	if rot%180 != 0 {
		in.Width, in.Height = in.Height, in.Width
	}
	if in.Pages <= 0 || !(in.Width > 0) || !(in.Height > 0) || math.IsInf(in.Width, 0) || math.IsInf(in.Height, 0) {
		return Info{}, &Error{Reason: "the PDF has no page with a size"}
	}
	return in, nil
}

// Cover renders the first page of the PDF at path as a PNG of exactly
// w×h pixels (the page's aspect ratio is the caller's to keep).
// pdftoppm out of memory says so and exits 0 with a broken PNG: one that
// is not whole and of that size is an error.
func (r *Reader) Cover(ctx context.Context, path string, w, h int) ([]byte, error) {
	out, err := r.run(ctx, int64(w)*int64(h)*4+1<<20, "pdftoppm", "-png", "-f", "1", "-l", "1", "-singlefile",
		"-scale-to-x", strconv.Itoa(w), "-scale-to-y", strconv.Itoa(h), path)
	if err != nil {
		return nil, err
	}
	cfg, cfgErr := png.DecodeConfig(bytes.NewReader(out))
	if cfgErr != nil || cfg.Width != w || cfg.Height != h || !bytes.HasSuffix(out, pngEnd) {
		return nil, &Error{Reason: "its first page could not be drawn within the memory bound"}
	}
	return out, nil
}

// pngEnd is a PNG's last chunk, IEND, with its CRC.
var pngEnd = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}

// Text extracts the text of the PDF at path (UTF-8, pages separated by a
// form feed), of its first Config.MaxPages pages.
func (r *Reader) Text(ctx context.Context, path string) ([]byte, error) {
	return r.run(ctx, r.cfg.MaxText, "pdftotext", "-enc", "UTF-8", "-l", strconv.Itoa(r.cfg.MaxPages), path, "-")
}
