package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

var (
	doclibOnce sync.Once
	doclibBin  string
	doclibErr  error
)

// doclib builds cmd/doclib once per test binary and returns its path.
func doclib(t testing.TB) string {
	t.Helper()
	doclibOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			doclibErr = err
			return
		}
		doclibBin = filepath.Join(binDir, "doclib")
		cmd := exec.Command("go", "build", "-o", doclibBin, "./cmd/doclib")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			doclibErr = fmt.Errorf("go build ./cmd/doclib: %v\n%s", err, out)
		}
	})
	if doclibErr != nil {
		t.Fatal(doclibErr)
	}
	return doclibBin
}

// Doclib runs the doclib command against st and returns its output and
// error (nil when it exited 0).
func (st *Stack) Doclib(args ...string) (string, error) {
	st.t.Helper()
	cmd := exec.Command(doclib(st.t), args...)
	cmd.Env = append(os.Environ(), "DOCLIB_URL="+st.AdminURL, "DOCLIB_TOKEN="+Token)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// seedLibrary writes through the API a library with every kind of record:
// a category with two tags, a PDF and two images, one document of each
// type, pins, revisions, a deleted document, a draft, pending changes, a
// moderator address. It returns the documents' ids by role.
func seedLibrary(st *Stack) map[string]string {
	st.t.Helper()
	st.Must("POST", "/bo/tags-categories", map[string]any{"id": "health", "name": "Santé"}, 201)
	st.Must("POST", "/bo/tags-categories", map[string]any{"id": "kids", "name": "Enfants"}, 201)
	st.Must("POST", "/bo/tags", map[string]any{"id": "vaccines", "name": "Vaccins", "categoryId": "health"}, 201)
	st.Must("POST", "/bo/tags", map[string]any{"id": "sleep", "name": "Sommeil", "categoryId": "kids"}, 201)
	pdf := st.Upload("guide.pdf", unique(pdfBytes, "export"))
	img := st.Upload("figure.png", unique(pngBytes, "export"))
	img2 := st.Upload("second.png", unique(pngBytes, "export2"))
	ids := map[string]string{}
	create := func(role string, body map[string]any) {
		var d docJSON
		st.Must("POST", "/bo/documents", body, 201).JSON(st.t, &d)
		ids[role] = d.ID
	}
	create("pdf", map[string]any{"type": "PDF", "title": "Guide", "fileId": pdf, "tagsIds": []string{"vaccines"}})
	create("link", map[string]any{"type": "LINK", "title": "Site", "url": "https://example.org", "tagsIds": []string{"vaccines", "sleep"},
		"relatedIds": []string{ids["pdf"]}})
	create("markdown", map[string]any{"type": "MARKDOWN", "title": "Fiche", "content": "# Fiche\n\n![Figure](figure.png)",
		"sources": []string{"OMS"}, "imagesIds": []string{img}, "tagsIds": []string{"sleep"}})
	create("html", map[string]any{"type": "HTML", "title": "Page", "content": "<h1>Page</h1><p>Bonjour</p>", "sources": []string{},
		"imagesIds": []string{img2}})
	create("deleted", map[string]any{"type": "LINK", "title": "Ancien", "url": "https://example.org/old"})
	create("draft", map[string]any{"type": "LINK", "title": "Brouillon", "url": "https://example.org/d", "status": "draft"})
	st.Must("PATCH", "/bo/documents/"+ids["link"], map[string]any{"type": "LINK", "title": "Site v2", "url": "https://example.org/v2",
		"tagsIds": []string{"vaccines", "sleep"}, "relatedIds": []string{ids["pdf"], ids["markdown"]}}, 200)
	st.Must("PATCH", "/bo/documents/"+ids["html"], map[string]any{"type": "HTML", "title": "Page (v2)", "content": "<h1>Page 2</h1>",
		"sources": []string{}, "imagesIds": []string{img2}, "draft": true}, 200)
	st.Must("DELETE", "/bo/documents/"+ids["deleted"], nil, 204)
	st.Must("PUT", "/bo/config", map[string]any{"moderatorEmail": "moderation@library.example"}, 200)
	return ids
}

func TestExportWritesAVerifiedArchive(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	seedLibrary(st)
	dir := t.TempDir()
	for _, name := range []string{"lib.tar", "lib.tar.zst"} {
		args := []string{"export", "-o", filepath.Join(dir, name)}
		if strings.HasSuffix(name, ".zst") {
			args = append(args, "-zstd")
		}
		out, err := st.Doclib(args...)
		testkit.Must(t, err, "export: "+out)
		out, err = st.Doclib("verify", filepath.Join(dir, name))
		testkit.Must(t, err, "verify: "+out)
		for _, want := range []string{"documents   6", "media       3", "tags        2", "categories  2"} {
			if !strings.Contains(out, want) {
				t.Errorf("verify %s: want %q in\n%s", name, want, out)
			}
		}
	}
}

// answers returns every read of the library, public and back-office, by
// path: status, ETag and body, so that two installations can be compared
// byte for byte.
func answers(st *Stack, ids map[string]string) map[string]string {
	st.t.Helper()
	out := map[string]string{}
	get := func(path string) Response {
		r := st.BO("GET", path, nil)
		out[path] = fmt.Sprintf("%d %s %s %s", r.Status, r.Header.Get("ETag"), r.Header.Get("Last-Modified"), r.Body)
		return r
	}
	for _, p := range []string{"/public/documents", "/public/tags-categories", "/public/config", "/bo/documents",
		"/bo/tags-categories", "/bo/config"} {
		get(p)
	}
	var medias []struct {
		ID string `json:"id"`
	}
	get("/bo/medias").JSON(st.t, &medias)
	for _, m := range medias {
		for _, p := range []string{"/public/medias/", "/bo/medias/"} {
			get(p + m.ID)
			get(p + m.ID + "/download")
		}
	}
	for _, id := range ids {
		for _, p := range []string{"/public/documents/" + id + "/detail", "/public/documents/" + id + "/download",
			"/bo/documents/" + id + "/detail", "/bo/documents/" + id + "/download"} {
			get(p)
		}
		var page struct {
			Revisions []struct {
				Version int `json:"version"`
			} `json:"revisions"`
		}
		get("/bo/documents/" + id + "/revisions").JSON(st.t, &page)
		for _, r := range page.Revisions {
			get(fmt.Sprintf("/bo/documents/%s/revisions/%d", id, r.Version))
		}
	}
	return out
}

func compareAnswers(t *testing.T, want, got map[string]string) {
	t.Helper()
	for path, w := range want {
		if g := got[path]; g != w {
			t.Errorf("%s differs after the import:\nsource: %.400s\nimport: %.400s", path, w, g)
		}
	}
}

// TestExportImportRoundTrip: a library seeded through the API, exported,
// imported into a fresh installation, answers every public and back-office
// read byte for byte the same, ETags and dates included; importing again
// changes nothing; a non-empty installation is refused without -merge.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	src := NewStack(t, nil)
	ids := seedLibrary(src)
	archivePath := filepath.Join(t.TempDir(), "lib.tar.zst")
	out, err := src.Doclib("export", "-zstd", "-o", archivePath)
	testkit.Must(t, err, "export: "+out)
	want := answers(src, ids)

	dst := NewStack(t, nil)
	out, err = dst.Doclib("import", archivePath)
	testkit.Must(t, err, "import: "+out)
	Eventually(t, 10*time.Second, "the imported library answers as the source", func() bool {
		return len(diff(want, answers(dst, ids))) == 0
	})
	compareAnswers(t, want, answers(dst, ids))

	out, err = dst.Doclib("import", archivePath)
	testkit.Must(t, err, "import again: "+out)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.Contains(line, "created 0,") || !strings.Contains(line, "kept 0") {
			t.Errorf("the second import changed something: %s", line)
		}
	}
	compareAnswers(t, want, answers(dst, ids))

	dst.Must("POST", "/bo/tags-categories", map[string]any{"id": "other", "name": "Autre"}, 201)
	out, err = dst.Doclib("import", archivePath)
	if err == nil || !strings.Contains(out, "not empty") {
		t.Errorf("an import into an installation holding other records: want a refusal, got %v\n%s", err, out)
	}
	out, err = dst.Doclib("import", "-merge", archivePath)
	testkit.Must(t, err, "import -merge: "+out)
}

func diff(want, got map[string]string) []string {
	var out []string
	for p, w := range want {
		if got[p] != w {
			out = append(out, p)
		}
	}
	return out
}
