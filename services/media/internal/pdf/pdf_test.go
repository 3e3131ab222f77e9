package pdf_test

import (
	"bytes"
	"context"
	"errors"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/doclib/services/media/internal/pdf"
	"github.com/doclib/services/media/internal/pdf/pdftest"
	"github.com/doclib/services/media/internal/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}

func need(t *testing.T) {
	t.Helper()
	if err := pdf.Available(); err != nil {
		t.Skip(err)
	}
}

func write(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.pdf")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestInfoCoverAndText(t *testing.T) {
	need(t)
	t.Parallel()
	r := pdf.NewReader(pdf.Config{})
	ctx := context.Background()
	path := write(t, pdftest.Pages(3))
	in, err := r.Info(ctx, path)
	if err != nil || in != (pdf.Info{Pages: 3, Width: 612, Height: 792}) {
		t.Fatalf("info %+v, %v; want 3 pages of 612×792", in, err)
	}
	cover, err := r.Cover(ctx, path, 160, 207)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(cover))
	if err != nil || img.Bounds().Dx() != 160 || img.Bounds().Dy() != 207 {
		t.Fatalf("cover: %v, %v; want a 160×207 PNG", err, img.Bounds())
	}
	text, err := r.Text(ctx, path)
	for i := 1; i <= 3; i++ {
		if err != nil || !bytes.Contains(text, []byte(pdftest.Word(i))) {
			t.Errorf("text %q, %v; want %s", text, err, pdftest.Word(i))
		}
	}
	if n := bytes.Count(text, []byte("\f")); n != 3 {
		t.Errorf("%d form feeds, want one after each page", n)
	}
	turned, err := r.Info(ctx, write(t, pdftest.Rotated(612, 792, 90)))
	if err != nil || turned.Width != 792 || turned.Height != 612 {
		t.Errorf("a page turned by 90°: %+v, %v; want 792×612 as shown", turned, err)
	}
}

// TestHostilePDFs: each hostile file is a clear *pdf.Error (or, for one a
// reader copes with, an answer) within the time bound, and the test
// process, which the service would be, lives on.
func TestHostilePDFs(t *testing.T) {
	need(t)
	t.Parallel()
	cfg := pdf.Config{Memory: 512 << 20, CPU: 3 * time.Second, Timeout: 5 * time.Second, MaxPages: 50, MaxText: 1 << 20}
	r := pdf.NewReader(cfg)
	good := pdftest.Pages(3)
	noise := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 20_000)
	for i := range junk {
		junk[i] = byte(noise.Uint32())
	}
	for _, c := range []struct {
		name    string
		content []byte
		reason  string // in the error of Info, when it must fail
	}{
		{"not a PDF after its signature", append([]byte("%PDF-1.7\n"), junk...), "not a readable PDF"},
		{"cut in half", good[:len(good)/2], ""},
		{"encrypted", pdftest.Encrypted(), "encrypted"},
		{"200,000 pages", pdftest.HugePageCount(200_000), ""},
		{"nested 200,000 deep", pdftest.DeepNesting(200_000), ""},
		{"a stream inflating to 64 MB", pdftest.FlateBomb(64 << 20), ""},
		{"empty", nil, "not a readable PDF"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, c.content)
			ctx := context.Background()
			start := time.Now()
			_, infoErr := r.Info(ctx, path)
			_, coverErr := r.Cover(ctx, path, 320, 414)
			_, textErr := r.Text(ctx, path)
			for what, err := range map[string]error{"info": infoErr, "cover": coverErr, "text": textErr} {
				var pe *pdf.Error
				if err != nil && !errors.As(err, &pe) {
					t.Errorf("%s: %v, want a *pdf.Error", what, err)
				}
				if err != nil {
					t.Logf("%s: %v", what, err)
				}
			}
			if c.reason != "" && (infoErr == nil || !strings.Contains(infoErr.Error(), c.reason)) {
				t.Errorf("info: %v, want an error saying %q", infoErr, c.reason)
			}
			if took := time.Since(start); took > 3*cfg.Timeout+3*time.Second {
				t.Errorf("three reads took %s, over three time bounds", took)
			}
		})
	}
}

// TestBounds: a run over its memory, its CPU time or its output is killed
// and answered with an error.
func TestBounds(t *testing.T) {
	need(t)
	t.Parallel()
	ctx := context.Background()
	path := write(t, pdftest.Pages(1))
	small := pdf.NewReader(pdf.Config{Memory: 48 << 20})
	if _, err := small.Cover(ctx, path, 8000, 10000); err == nil {
		t.Error("an 80-megapixel page in 48 MiB of memory: no error")
	}
	slow := pdf.NewReader(pdf.Config{CPU: time.Second, Timeout: 2 * time.Second})
	bomb := write(t, pdftest.FlateBomb(64<<20))
	start := time.Now()
	_, err := slow.Cover(ctx, bomb, 2000, 2000)
	t.Logf("a 64 MB stream in 1 s of CPU: %v after %s", err, time.Since(start))
	if time.Since(start) > 4*time.Second {
		t.Errorf("a run bound to 2 s took %s", time.Since(start))
	}
	short := pdf.NewReader(pdf.Config{MaxText: 10})
	if _, err := short.Text(ctx, path); err == nil || !strings.Contains(err.Error(), "over 10 bytes") {
		t.Errorf("text over its 10-byte bound: %v, want an error saying so", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := slow.Info(ctx, path); !errors.Is(err, context.Canceled) {
		t.Errorf("a run for a request gone: %v, want context.Canceled", err)
	}
}

// FuzzReader: mutations of a well-formed PDF never make anything but an
// answer or a *pdf.Error, within the time bound. go test runs the seeds;
// go test -fuzz FuzzReader runs it for as long as asked.
func FuzzReader(f *testing.F) {
	if pdf.Available() != nil {
		f.Skip("poppler-utils missing")
	}
	for _, seed := range [][]byte{pdftest.Pages(2), pdftest.Encrypted(), pdftest.HugePageCount(50), pdftest.DeepNesting(50)} {
		f.Add(seed)
	}
	r := pdf.NewReader(pdf.Config{Memory: 256 << 20, CPU: time.Second, Timeout: 2 * time.Second, MaxPages: 10, MaxText: 1 << 20})
	f.Fuzz(func(t *testing.T, b []byte) {
		path := write(t, b)
		for _, run := range []func() error{
			func() error { _, err := r.Info(context.Background(), path); return err },
			func() error { _, err := r.Cover(context.Background(), path, 64, 64); return err },
			func() error { _, err := r.Text(context.Background(), path); return err },
		} {
			var pe *pdf.Error
			if err := run(); err != nil && !errors.As(err, &pe) {
				t.Fatalf("%v, want a *pdf.Error", err)
			}
		}
	})
}
