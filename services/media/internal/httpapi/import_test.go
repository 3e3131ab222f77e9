package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/validation"
	"github.com/doclib/services/media/internal/media"
)

// countingReader counts the bytes read from it.
type countingReader struct{ n int }

func (r *countingReader) Read(p []byte) (int, error) {
	r.n += len(p)
	return len(p), nil
}

// TestImportOverTheLimitReadsNoByte (review finding 3): an imported record
// whose size is over the upload limit is refused before a byte of its file
// is read (an archive's 10 GiB media is not streamed only to be refused),
// and nothing of it is kept.
func TestImportOverTheLimitReadsNoByte(t *testing.T) {
	a := newAPI(t, media.Config{MaxSize: 1 << 20})
	rec := media.Media{ID: media.NewID(), Name: "huge.pdf", MimeType: "application/pdf", Size: 10 << 30,
		SHA256: strings.Repeat("a", 64), CreatedAt: time.Now().UTC()}
	body := &countingReader{}
	_, _, err := a.svc.Import(context.Background(), rec, body)
	var tooLarge *media.TooLargeError
	if !errors.As(err, &tooLarge) || body.n != 0 {
		t.Fatalf("a 10 GiB record over a 1 MiB limit: %v after %d bytes read; want a TooLargeError and none read", err, body.n)
	}
	if _, err := a.store.Get(context.Background(), rec.ID); !errors.Is(err, media.ErrNotFound) {
		t.Errorf("the refused media is stored: %v", err)
	}
}

// TestImportAppliesTheUploadRules: an imported record whose name an upload
// would not keep (a path, a line break) or whose authors are over 1,024
// characters is refused, naming the field, before a byte is read; nothing
// is kept.
func TestImportAppliesTheUploadRules(t *testing.T) {
	a := newAPI(t, media.Config{MaxSize: 1 << 20})
	for _, tc := range []struct{ name, createdBy, field string }{
		{"../../etc/passwd", "alice", "name"},
		{"a\r\nb.png", "alice", "name"},
		{"ok.png", strings.Repeat("a", 5000), "createdBy"},
	} {
		rec := media.Media{ID: media.NewID(), Name: tc.name, MimeType: "image/png", Size: 10,
			SHA256: strings.Repeat("a", 64), CreatedAt: time.Now().UTC(), CreatedBy: tc.createdBy}
		body := &countingReader{}
		_, _, err := a.svc.Import(context.Background(), rec, body)
		var fields validation.Errors
		if !errors.As(err, &fields) || len(fields) != 1 || fields[0].Field != tc.field || body.n != 0 {
			t.Errorf("name %q, createdBy of %d: %v after %d bytes read, want one error on %s", tc.name, len(tc.createdBy), err, body.n, tc.field)
		}
		if _, err := a.store.Get(context.Background(), rec.ID); !errors.Is(err, media.ErrNotFound) {
			t.Errorf("the refused media is stored: %v", err)
		}
	}
}
