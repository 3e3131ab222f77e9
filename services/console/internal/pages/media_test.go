package pages

import (
	"bytes"
	"fmt"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/session"
)

// An upload over the console's body limit is a 413 that states the limit
// (it was "Pick one or more files"), and no file reaches the API.
func TestUploadOverTheLimit(t *testing.T) {
	t.Parallel()
	uploads := 0
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			uploads++
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("[]"))
	}))
	defer api.Close()
	base, _ := url.Parse(api.URL)
	p, err := New(Config{Log: slog.New(slog.DiscardHandler), API: boclient.New(base, time.Second), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("files", "big.pdf")
	_, _ = fw.Write(bytes.Repeat([]byte("x"), 3<<20))
	_ = mw.Close()
	rec := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(rec)
	c.Request = httptest.NewRequest(http.MethodPost, "/console/media", &body)
	c.Request.Header.Set("Content-Type", mw.FormDataContentType())
	c.Request.Body = http.MaxBytesReader(rec, c.Request.Body, 2<<20)
	c.Set(sessionKey, session.Session{Token: "t", Role: session.Editor})
	p.uploadMedia(c)
	if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "(2 MiB)") || uploads != 0 {
		t.Errorf("an upload over the limit: %d, %d uploads, page %.300q", rec.Code, uploads, rec.Body.String())
	}
}

// A version's references that no longer exist are named before a restore.
func TestGoneOf(t *testing.T) {
	t.Parallel()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		answers := map[string]string{
			"/bo/tags-categories": `[{"id":"c","name":"C","tags":[{"id":"kept","name":"K","categoryId":"c"}]}]`,
			"/bo/medias":          `[{"id":"img","mimeType":"image/png"}]`,
			"/bo/documents":       `[{"id":"live"},{"id":"dead","isDeleted":true}]`,
		}
		_, _ = w.Write([]byte(answers[r.URL.Path]))
	}))
	defer api.Close()
	base, _ := url.Parse(api.URL)
	p, err := New(Config{Log: slog.New(slog.DiscardHandler), API: boclient.New(base, time.Second), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	doc := boclient.Document{ID: "d", TagIDs: []string{"kept", "gone"}, ImageIDs: []string{"img", "old"},
		RelatedIDs: []string{"live", "dead"}, File: &boclient.FileRef{ID: "pdf"}}
	g, _ := p.goneOf(t.Context(), "t", doc)
	if g == nil || !g.Any() || !g.File || fmt.Sprint(g.Tags, g.Images, g.Pins) != "[gone] [old] [dead]" {
		t.Errorf("gone = %+v", g)
	}
}
