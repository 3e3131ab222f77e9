package httpapi

import (
	"bufio"
	"context"
	"io"
	"os"
	"sync"
)

// spool keeps the bundles made lately (bundle.go) on disk, one file per
// ETag, so that a bundle is written (and compressed) once per snapshot,
// filter and encoding however many clients download it, and every
// download is a copy from a file: memory stays flat whatever the bundle's
// size or the number of clients. Its files are unlinked as soon as they
// are made (what is open stays readable): none outlives the process.
type spool struct {
	maxBytes int64

	mu       sync.Mutex
	files    map[string]*spooled
	order    []string // keys of files, oldest first
	size     int64
	building map[string]*spoolBuild
}

// spooled is one bundle's file; closed once evicted and no reader holds it.
type spooled struct {
	f       *os.File
	size    int64
	readers int
	evicted bool
}

type spoolBuild struct {
	done chan struct{}
	file *spooled
	err  error
}

// spoolBytes bounds the bundles kept; the newest is kept whatever its size.
const spoolBytes = 1 << 30

func newSpool(maxBytes int64) *spool {
	return &spool{maxBytes: maxBytes, files: map[string]*spooled{}, building: map[string]*spoolBuild{}}
}

// open returns the file of key, made by write if it is not kept (once,
// however many ask meanwhile), held for reading until release.
func (s *spool) open(ctx context.Context, key string, write func(io.Writer) error) (*spooled, error) {
	for {
		s.mu.Lock()
		if f, ok := s.files[key]; ok {
			f.readers++
			s.mu.Unlock()
			return f, nil
		}
		if b, ok := s.building[key]; ok {
			s.mu.Unlock()
			select {
			case <-b.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			// Made, or failed (its maker's request may have ended): look
			// again, and make it if it is still not there.
			continue
		}
		b := &spoolBuild{done: make(chan struct{})}
		s.building[key] = b
		s.mu.Unlock()
		return s.make(key, b, write)
	}
}

// make writes the file of key and keeps it.
func (s *spool) make(key string, b *spoolBuild, write func(io.Writer) error) (*spooled, error) {
	b.file, b.err = spoolFile(write)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.building, key)
	close(b.done)
	if b.err != nil {
		return nil, b.err
	}
	b.file.readers++
	s.files[key] = b.file
	s.order = append(s.order, key)
	s.size += b.file.size
	for s.size > s.maxBytes && len(s.order) > 1 {
		old := s.files[s.order[0]]
		delete(s.files, s.order[0])
		s.order = s.order[1:]
		s.size -= old.size
		old.evicted = true
		old.closeIfUnread()
	}
	return b.file, nil
}

// spoolFile writes what write writes to an unlinked temporary file.
func spoolFile(write func(io.Writer) error) (*spooled, error) {
	f, err := os.CreateTemp("", "catalog-bundle-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name()) // readable while open, gone with the process
	w := bufio.NewWriterSize(f, 64<<10)
	if err = write(w); err == nil {
		err = w.Flush()
	}
	var size int64
	if err == nil {
		size, err = f.Seek(0, io.SeekEnd)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return &spooled{f: f, size: size}, nil
}

// release gives back a file open returned.
func (s *spool) release(f *spooled) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f.readers--
	f.closeIfUnread()
}

func (f *spooled) closeIfUnread() {
	if f.evicted && f.readers == 0 {
		_ = f.f.Close()
	}
}

// reader reads the whole file, independently of other readers.
func (f *spooled) reader() io.Reader { return io.NewSectionReader(f.f, 0, f.size) }
