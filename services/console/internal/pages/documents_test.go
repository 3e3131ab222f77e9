package pages

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/services/console/internal/boclient"
	"github.com/doclib/services/console/internal/session"
)

// BenchmarkDocumentsPage renders the documents page of 1,000 documents
// from a stand-in API that answers 304 to its ETag (the page's own cost;
// e2e BenchmarkConsole measures it through the real stack): unfiltered
// (the rows kept, listcache.go) and with a search (rendered each time).
func BenchmarkDocumentsPage(b *testing.B) {
	var cats []boclient.Category
	for c := range 4 {
		cat := boclient.Category{ID: fmt.Sprintf("c%d", c), Name: fmt.Sprintf("Catégorie %d", c)}
		for t := range 5 {
			cat.Tags = append(cat.Tags, boclient.Tag{ID: fmt.Sprintf("t%d-%d", c, t), Name: fmt.Sprintf("Étiquette %d.%d", c, t), CategoryID: cat.ID})
		}
		cats = append(cats, cat)
	}
	docs := make([]boclient.DocumentShort, 1000)
	for i := range docs {
		docs[i] = boclient.DocumentShort{ID: fmt.Sprintf("doc%04d", i), Title: fmt.Sprintf("Guide pratique santé n°%d", i), Type: "LINK",
			Status: "published", TagIDs: []string{fmt.Sprintf("t%d-1", i%4), fmt.Sprintf("t%d-2", (i+1)%4)}, UpdatedAt: "2026-11-27T05:00:00.000Z", UpdatedBy: "alice"}
	}
	catJSON, _ := json.Marshal(cats)
	docJSON, _ := json.Marshal(docs)
	r := standIn(b, func(path string) ([]byte, string, int) {
		if path == "/bo/tags-categories" {
			return catJSON, `"c1"`, http.StatusOK
		}
		if id, ok := strings.CutSuffix(strings.TrimPrefix(path, "/bo/documents/"), "/detail"); ok {
			return []byte(`{"id":"` + id + `","status":"published","updatedAt":"2026-11-27T05:00:00.000Z"}`), `"x"`, http.StatusOK
		}
		return docJSON, `"d1"`, http.StatusOK
	})
	for _, path := range []string{"/console/", "/console/?q=guide"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%d", rec.Code)
				}
				b.SetBytes(int64(rec.Body.Len()))
			}
		})
	}
}

// standIn is the documents page on a stand-in API: answer gives a path's
// body, ETag and status; an If-None-Match of that ETag is a 304.
func standIn(tb testing.TB, answer func(path string) ([]byte, string, int)) *gin.Engine {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, etag, status := answer(r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("ETag", etag)
		if status == http.StatusOK && r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	}))
	tb.Cleanup(api.Close)
	base, _ := url.Parse(api.URL)
	p, err := New(Config{API: boclient.New(base, 5*time.Second), Log: slog.New(slog.DiscardHandler), Timeout: 5 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	gin.SetMode(gin.TestMode)
	r := gin.New()
	r.GET("/console/", func(c *gin.Context) { c.Set(sessionKey, session.Session{ID: "s", Token: "t", Role: session.Editor}) }, p.documents)
	return r
}

// The kept rows follow the library: a new listing ETag renders them again,
// and a refusal of the token is a refusal even with rows kept.
func TestDocumentsPageFollowsTheLibrary(t *testing.T) {
	t.Parallel()
	title, etag, status := "Premier", `"v1"`, http.StatusOK
	r := standIn(t, func(path string) ([]byte, string, int) {
		if path == "/bo/tags-categories" {
			return []byte(`[]`), `"c"`, http.StatusOK
		}
		if status != http.StatusOK {
			return []byte(`{"status":401,"code":"unauthorized","detail":"no"}`), "", status
		}
		return []byte(`[{"id":"a","title":"` + title + `","type":"LINK","tagsIds":[]}]`), etag, http.StatusOK
	})
	page := func() (int, string) {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/", nil))
		return rec.Code, rec.Body.String()
	}
	for _, step := range []struct{ title, etag, want string }{
		{"Premier", `"v1"`, "Premier"}, {"Premier", `"v1"`, "Premier"}, {"Second", `"v2"`, "Second"},
	} {
		title, etag = step.title, step.etag
		if code, body := page(); code != http.StatusOK || !strings.Contains(body, ">"+step.want+"</a>") {
			t.Errorf("page at %s: %d, want the row %q:\n%s", etag, code, step.want, body)
		}
	}
	status = http.StatusUnauthorized
	if code, _ := page(); code != http.StatusSeeOther {
		t.Errorf("page with a refused token: %d, want 303 to the sign-in", code)
	}
}

// The list shows the states the listing does not carry (pending changes,
// a scheduled publication) from each document's detail, read once per
// change of the document.
func TestDocumentsListShowsPendingAndScheduled(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	reads := map[string]int{}
	aChanged := "2026-11-27T05:00:00.000Z"
	r := standIn(t, func(path string) ([]byte, string, int) {
		mu.Lock()
		defer mu.Unlock()
		switch path {
		case "/bo/tags-categories":
			return []byte(`[]`), `"c"`, http.StatusOK
		case "/bo/documents":
			return []byte(`[{"id":"a","title":"Alpha","type":"LINK","status":"published","tagsIds":[],"updatedAt":"` + aChanged + `"},
				{"id":"b","title":"Beta","type":"LINK","status":"draft","tagsIds":[],"updatedAt":"2026-11-27T05:00:00.000Z"},
				{"id":"c","title":"Gamma","type":"LINK","status":"published","tagsIds":[],"isDeleted":true,"updatedAt":"2026-11-27T05:00:00.000Z"},
				{"id":"d","title":"Delta","type":"LINK","status":"published","tagsIds":[],"pendingChanges":true,"updatedAt":"2026-11-27T05:00:00.000Z"}]`), `"` + aChanged + `"`, http.StatusOK
		case "/bo/documents/a/detail":
			reads["a"]++
			return []byte(`{"id":"a","status":"published","updatedAt":"` + aChanged + `","draft":{"title":"Alpha 2"}}`), `"a"`, http.StatusOK
		case "/bo/documents/b/detail":
			reads["b"]++
			return []byte(`{"id":"b","status":"draft","updatedAt":"2026-11-27T05:00:00.000Z","publishAt":"2099-01-01T09:00:00.000Z"}`), `"b"`, http.StatusOK
		}
		reads[path]++
		return []byte(`{"status":404,"code":"not_found","detail":"no"}`), "", http.StatusNotFound
	})
	row := func(body, title string) string {
		i := strings.Index(body, ">"+title+"</a>")
		if i < 0 {
			t.Fatalf("no row %q in:\n%s", title, body)
		}
		end := strings.Index(body[i:], "</tr>")
		return body[i : i+end]
	}
	for range 2 {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/console/", nil))
		body := rec.Body.String()
		for title, want := range map[string][]string{"Alpha": {"Published", "Pending changes"}, "Beta": {"Draft", "Scheduled"}, "Delta": {"Published", "Pending changes"}} {
			for _, w := range want {
				if !strings.Contains(row(body, title), ">"+w+"<") {
					t.Errorf("row %s lacks the badge %q:\n%s", title, w, row(body, title))
				}
			}
		}
	}
	mu.Lock()
	if reads["a"] != 1 || reads["b"] != 1 || len(reads) != 2 {
		t.Errorf("details read %v, want a and b once each (c is deleted, d's listing says its states)", reads)
	}
	aChanged = "2026-11-28T05:00:00.000Z"
	mu.Unlock()
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/console/", nil))
	mu.Lock()
	defer mu.Unlock()
	if reads["a"] != 2 || reads["b"] != 1 {
		t.Errorf("after a changed, details read %v, want a again and b not", reads)
	}
}
