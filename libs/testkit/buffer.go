package testkit

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects output written from several goroutines (a logger, a
// child process's pipe) for a test to read.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Contains reports whether sub was written.
func (s *Buffer) Contains(sub string) bool { return strings.Contains(s.String(), sub) }
