package httpapi

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Many clients asking for the same bundle at once get it written once;
// each reads it whole and on its own; a bundle evicted while read stays
// readable until its reader is done; a failed write is not kept.
func TestSpool(t *testing.T) {
	t.Parallel()
	s := newSpool(10)
	var writes atomic.Int32
	write := func(body string) func(io.Writer) error {
		return func(w io.Writer) error {
			writes.Add(1)
			_, err := io.WriteString(w, body)
			return err
		}
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			f, err := s.open(context.Background(), "a", write("0123456789"))
			if err != nil {
				t.Error(err)
				return
			}
			defer s.release(f)
			if b, err := io.ReadAll(f.reader()); err != nil || string(b) != "0123456789" {
				t.Errorf("read %q, %v", b, err)
			}
		})
	}
	wg.Wait()
	if n := writes.Load(); n != 1 {
		t.Errorf("16 clients at once: written %d times, want once", n)
	}

	held, err := s.open(context.Background(), "a", write("never"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.open(context.Background(), "b", write(strings.Repeat("b", 8))); err != nil { // evicts a: over 10 bytes
		t.Fatal(err)
	}
	if _, ok := s.files["a"]; ok {
		t.Error("the older bundle is still kept past the bound")
	}
	if b, err := io.ReadAll(held.reader()); err != nil || string(b) != "0123456789" {
		t.Errorf("an evicted bundle being read: %q, %v; want it whole", b, err)
	}
	s.release(held)
	if _, err := held.f.Stat(); err == nil {
		t.Error("an evicted bundle is still open after its last reader")
	}

	boom := errors.New("disk full")
	if _, err := s.open(context.Background(), "c", func(io.Writer) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("a failed write: %v, want its error", err)
	}
	if f, err := s.open(context.Background(), "c", write("ok")); err != nil || f.size != 2 {
		t.Errorf("after a failed write, the next: %v, %v; want it written", f, err)
	}
}
