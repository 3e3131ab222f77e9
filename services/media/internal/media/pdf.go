package media

import (
	"context"
	"fmt"
	"os"
	"time"
)

// PDFType is the media type of PDF files.
const PDFType = "application/pdf"

// inspectTimeout bounds the reading of an uploaded PDF's page count,
// waiting for a slot included.
const inspectTimeout = 15 * time.Second

// InspectConcurrency is how many uploaded PDFs are read at once; more wait
// for a slot (within inspectTimeout) or are stored uninspected.
const InspectConcurrency = 2

// spool is a temporary file an upload's bytes are copied to as they
// stream, so that a PDF can be inspected once it is complete.
type spool struct {
	f   *os.File
	err error
}

func newSpool() (*spool, error) {
	f, err := os.CreateTemp("", "media-upload-*.pdf")
	if err != nil {
		return nil, fmt.Errorf("temporary file for a PDF: %w", err)
	}
	return &spool{f: f}, nil
}

func (s *spool) remove() {
	_ = s.f.Close()
	_ = os.Remove(s.f.Name())
}

// inspectPDF sets the page count and first page's size of m. A PDF that
// cannot be read (malformed, encrypted, too costly) is stored all the
// same, without them: it is the editor's file, and its cover and text
// requests then say why.
func (s *Service) inspectPDF(ctx context.Context, m *Media, sp *spool) {
	if sp.err != nil {
		s.log.WarnContext(ctx, "could not spool a PDF to read its pages", "media_id", m.ID, "error", sp.err)
		return
	}
	ctx, cancel := context.WithTimeout(ctx, inspectTimeout)
	defer cancel()
	select {
	case s.inspecting <- struct{}{}:
		defer func() { <-s.inspecting }()
	case <-ctx.Done():
		s.log.WarnContext(ctx, "too many PDFs being read: this one is stored without its pages", "media_id", m.ID)
		return
	}
	pages, w, h, err := s.pdf.Inspect(ctx, sp.f.Name())
	if err != nil {
		s.log.InfoContext(ctx, "a PDF's pages could not be read", "media_id", m.ID, "error", err)
		return
	}
	m.Pages, m.PageWidth, m.PageHeight = pages, w, h
}
