package restore

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/cmd/doclib/internal/archive"
	"github.com/doclib/cmd/doclib/internal/client"
)

// swapped reads first until rewound, then second: a file rewritten in
// place between the import's verify and its import.
type swapped struct {
	*bytes.Reader
	second []byte
}

func (s *swapped) Seek(off int64, whence int) (int64, error) {
	s.Reader = bytes.NewReader(s.second)
	return s.Reader.Seek(off, whence)
}

func archiveWith(t *testing.T, doc string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, false, "test", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range [][2]string{{archive.DocumentEntry("d1"), doc}, {archive.CategoriesPath, ""},
		{archive.TagsPath, ""}, {archive.SettingsPath, "{}"}, {archive.MediaPath, ""}} {
		if err := w.WriteBytes(e[0], []byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(map[string]int{"categories": 0, "tags": 0, "documents": 1, "revisions": 0, "media": 0, "mediaBytes": 0}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestImportRefusesAnEntryChangedSinceVerify: the archive rewritten
// between the two reads (a valid archive of its own) imports nothing of
// what changed.
func TestImportRefusesAnEntryChangedSinceVerify(t *testing.T) {
	var mu sync.Mutex
	var puts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, "[]")
			return
		}
		mu.Lock()
		puts = append(puts, r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	first := archiveWith(t, `{"document":{"id":"d1","tagsIds":[],"relatedIds":[]},"revisions":[]}`)
	second := archiveWith(t, `{"document":{"id":"d1","tagsIds":[],"relatedIds":[],"title":"not verified"},"revisions":[]}`)
	r := &swapped{Reader: bytes.NewReader(first), second: second}
	_, err := run(context.Background(), client.New(srv.URL, "t"), r, "a.tar", false, 2, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "entry documents/d1.json: not the entry verified") {
		t.Fatalf("want the changed entry refused, got %v", err)
	}
	for _, p := range puts {
		if strings.HasPrefix(p, "/bo/import/documents/") {
			t.Errorf("the changed document was sent: PUT %s", p)
		}
	}
}
