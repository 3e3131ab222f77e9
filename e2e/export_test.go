package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
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

// doclibEnv is the environment of a doclib run against st: this process's
// with the stack's admin URL and an editor's token, then extra.
func (st *Stack) doclibEnv(extra ...string) []string {
	return append(append(os.Environ(), "DOCLIB_URL="+st.AdminURL, "DOCLIB_TOKEN="+Token), extra...)
}

// Doclib runs the doclib command against st and returns its output and
// error (nil when it exited 0).
func (st *Stack) Doclib(args ...string) (string, error) {
	st.t.Helper()
	cmd := exec.Command(doclib(st.t), args...)
	cmd.Env = st.doclibEnv()
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

var requestID = regexp.MustCompile(`"requestId":"[^"]*"`)

// answers returns every read of the library, public and back-office, by
// path: status, ETag and body, so that two installations can be compared
// byte for byte.
func answers(st *Stack, ids map[string]string) map[string]string {
	st.t.Helper()
	out := map[string]string{}
	get := func(path string) Response {
		r := st.BO("GET", path, nil)
		body := requestID.ReplaceAll(r.Body, nil) // a problem's requestId is the request's own
		out[path] = fmt.Sprintf("%d %s %s %s", r.Status, r.Header.Get("ETag"), r.Header.Get("Last-Modified"), body)
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
		get("/bo/documents/"+id+"/revisions").JSON(st.t, &page)
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
	// A download read within the second of its document's last change has
	// no Last-Modified yet (httpx.LastModified); the imported one is read
	// later and has it. Read the source once that second is over.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	want := answers(src, ids)

	plainPath := filepath.Join(t.TempDir(), "lib.tar")
	out, err = src.Doclib("export", "-o", plainPath)
	testkit.Must(t, err, "export: "+out)

	dst := NewStack(t, nil)
	refuseDamagedArchives(t, dst, plainPath)
	// An import interrupted (media down: the error names the entry) is run
	// again and finishes. -merge skips the emptiness check, which would
	// stop at its first question to media; the run again without it is
	// accepted, the installation holding only the archive's records.
	dst.Stop("media")
	out, err = dst.Doclib("import", "-merge", archivePath)
	if err == nil || !strings.Contains(out, "entry media/") {
		t.Errorf("an import with media down: want an error naming a media entry, got %v\n%s", err, out)
	}
	dst.Start("media")
	out, err = dst.Doclib("import", archivePath)
	testkit.Must(t, err, "import again after the interruption: "+out)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if len(diff(want, answers(dst, ids))) == 0 { // the catalog's replica memory follows within ~100 ms
			break
		}
	}
	t.Logf("import:\n%s", out)
	compareAnswers(t, want, answers(dst, ids))

	out, err = dst.Doclib("import", archivePath)
	testkit.Must(t, err, "import again: "+out)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.Contains(line, "created") && (!strings.Contains(line, "created 0,") || !strings.Contains(line, "kept 0")) {
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

// TestExportDuringConcurrentWrites: exports made while editors create and
// delete tags, media and the documents naming them always verify: no
// document in an archive names a tag, category, media or pinned document
// missing from it.
func TestExportDuringConcurrentWrites(t *testing.T) {
	t.Parallel()
	st := NewStack(t, nil)
	seedLibrary(st)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				churn(st, fmt.Sprintf("w%d-%d", w, i))
			}
		}()
	}
	dir := t.TempDir()
	for i := range 3 {
		path := filepath.Join(dir, fmt.Sprintf("lib-%d.tar", i))
		out, err := st.Doclib("export", "-o", path)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("export %d during writes: %v\n%s", i, err, out)
		}
		if out, err := st.Doclib("verify", path); err != nil {
			t.Errorf("export %d during writes does not verify: %v\n%s", i, err, out)
		}
	}
	close(stop)
	wg.Wait()
}

// churn makes a tag, a media and a document naming both and pinning the
// previous one, then deletes the tag and the media (the document loses
// them through the deletion events) and the document. Errors are ignored:
// it races the export, not the test.
func churn(st *Stack, n string) {
	bo := func(method, path string, body any) Response {
		return st.ReqAt(st.AdminURL, method, path, body, "Authorization", "Bearer "+Token)
	}
	bo("POST", "/bo/tags", map[string]any{"id": "t-" + n, "name": "T " + n, "categoryId": "health"})
	body, ctype := fileBody(st.t, n+".png", unique(pngBytes, n))
	var m struct {
		ID string `json:"id"`
	}
	r := st.ReqAt(st.AdminURL, "POST", "/bo/medias", body, "Authorization", "Bearer "+Token, "Content-Type", ctype)
	if r.Status != 201 || json.Unmarshal(r.Body, &m) != nil {
		return
	}
	var d struct {
		ID string `json:"id"`
	}
	r = bo("POST", "/bo/documents", map[string]any{"type": "MARKDOWN", "title": "Doc " + n, "content": "x", "sources": []string{},
		"imagesIds": []string{m.ID}, "tagsIds": []string{"t-" + n}})
	_ = json.Unmarshal(r.Body, &d)
	bo("DELETE", "/bo/tags/t-"+n, nil)
	if d.ID != "" {
		bo("DELETE", "/bo/documents/"+d.ID, nil)
	}
	bo("DELETE", "/bo/medias/"+m.ID, nil)
}

// refuseDamagedArchives: a truncated archive and one with a changed byte are
// refused by import with the entry named, and nothing is written.
func refuseDamagedArchives(t *testing.T, st *Stack, plainPath string) {
	t.Helper()
	raw, err := os.ReadFile(plainPath)
	testkit.Must(t, err, "read the archive")
	dir := t.TempDir()
	changed := bytes.Replace(raw, []byte(`"title":"Guide"`), []byte(`"title":"Guidf"`), 1)
	for _, c := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"truncated.tar", raw[:len(raw)/2], "truncated"},
		{"changed.tar", changed, "entry documents/"},
	} {
		path := filepath.Join(dir, c.name)
		testkit.Must(t, os.WriteFile(path, c.raw, 0o600), "write "+c.name)
		out, err := st.Doclib("import", path)
		if err == nil || !strings.Contains(out, c.want) || !strings.Contains(out, "nothing was imported") {
			t.Errorf("import %s: want a refusal naming %q, got %v\n%s", c.name, c.want, err, out)
		}
	}
	for _, p := range []string{"/bo/documents", "/bo/tags-categories", "/bo/medias"} {
		if r := st.BO("GET", p, nil); string(r.Body) != "[]" {
			t.Errorf("after refused imports %s = %s, want []", p, r.Body)
		}
	}
	// A media whose bytes are not the ones its record names: 422, nothing kept.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	rec, _ := mw.CreateFormField("record")
	_, _ = rec.Write([]byte(`{"id":"digestTest","name":"x.png","mimeType":"image/png","size":` + strconv.Itoa(len(pngBytes)) +
		`,"sha256":"` + strings.Repeat("0", 64) + `","createdAt":"2026-11-20T09:00:00.000Z","updatedAt":"2026-11-20T09:00:00.000Z"}`))
	file, _ := mw.CreateFormFile("file", "x.png")
	_, _ = file.Write(pngBytes)
	testkit.Must(t, mw.Close(), "multipart")
	r := st.BO("PUT", "/bo/import/medias/digestTest", form.Bytes(), "Content-Type", mw.FormDataContentType())
	if r.Status != 422 || !strings.Contains(string(r.Body), "digest_mismatch") {
		t.Errorf("a media of another digest: %d %s, want 422 digest_mismatch", r.Status, r.Body)
	}
	if r := st.BO("GET", "/bo/medias/digestTest", nil); r.Status != 404 {
		t.Errorf("the refused media is there: %d %s", r.Status, r.Body)
	}
}

// importRoutes calls each import route to a success and to an error
// (TestOpenAPIConformance's coverage).
func importRoutes(t *testing.T, call func(method, path string, body any, want int, headers ...string) Response) {
	t.Helper()
	const at = `"createdAt":"2026-11-20T09:00:03.118Z","updatedAt":"2026-11-20T09:00:03.118Z"`
	call("PUT", "/bo/import/tags-categories/imported", `{"id":"imported","name":"Importée",`+at+`}`, 201)
	call("PUT", "/bo/import/tags-categories/bad", `{"id":"bad","name":"Bad","createdAt":"then","updatedAt":"then"}`, 422)
	call("PUT", "/bo/import/tags/imported-tag", `{"id":"imported-tag","name":"Tag","categoryId":"imported",`+at+`}`, 201)
	call("PUT", "/bo/import/tags/orphan", `{"id":"orphan","name":"Orphan","categoryId":"nope",`+at+`}`, 422)
	// The settings already set, imported again, change nothing (200); other
	// settings are a conflict (an import never overwrites).
	var cfg struct {
		ModeratorEmail string `json:"moderatorEmail"`
		UpdatedAt      string `json:"updatedAt"`
		UpdatedBy      string `json:"updatedBy"`
	}
	call("GET", "/bo/config", nil, 200).JSON(t, &cfg)
	if cfg.UpdatedAt == "" {
		cfg.ModeratorEmail, cfg.UpdatedAt, cfg.UpdatedBy = "moderation@example.org", "2026-11-20T09:00:03.118Z", "alice"
	}
	call("PUT", "/bo/import/config", cfg, 200)
	call("PUT", "/bo/import/config", `{"moderatorEmail":"other@example.org","updatedAt":"2026-11-20T09:00:03.118Z","updatedBy":"bob"}`, 409)
	call("PUT", "/bo/import/config", `{"moderatorEmail":"moderation@example.org"}`, 422)
	doc := `{"id":"importedDoc1","title":"Imported","type":"LINK","url":"https://example.org/i","tagsIds":["imported-tag"],"sources":[],` +
		`"relatedDocuments":[],"relatedIds":[],"isDeleted":false,` + at + `,"createdBy":"alice","updatedBy":"alice","status":"published",` +
		`"version":1,"publishedAt":"2026-11-20T09:00:03.118Z","draft":null}`
	call("PUT", "/bo/import/documents/importedDoc1/revisions/1",
		`{"version":1,"at":"2026-11-20T09:00:03.118Z","by":"alice","why":"POST /bo/documents","document":`+doc+`}`, 204)
	call("PUT", "/bo/import/documents/importedDoc1/revisions/2",
		`{"version":1,"at":"2026-11-20T09:00:03.118Z","by":"alice","why":"POST /bo/documents","document":`+doc+`}`, 422)
	call("PUT", "/bo/import/documents/importedDoc1", doc, 201)
	call("PUT", "/bo/import/documents/importedDoc1", strings.Replace(doc, `"Imported"`, `"Changed"`, 1), 409)
	doc2 := strings.Replace(doc, "importedDoc1", "importedDoc2", 1)
	call("PUT", "/bo/import/documents/importedDoc2/entry", `{"document":`+doc2+`,"revisions":[{"version":1,`+
		`"at":"2026-11-20T09:00:03.118Z","by":"alice","why":"POST /bo/documents","document":`+doc2+`}]}`, 201)
	call("PUT", "/bo/import/documents/importedDoc3/entry", `{"document":`+doc2+`,"revisions":[]}`, 422)
	for _, c := range []struct {
		digest string
		want   int
	}{{strings.Repeat("0", 64), 422}, {fmt.Sprintf("%x", sha256.Sum256(unique(pngBytes, "imported"))), 201}} {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		rec, _ := mw.CreateFormField("record")
		_, _ = rec.Write([]byte(`{"id":"importedMedia","name":"i.png","mimeType":"image/png","size":` +
			strconv.Itoa(len(unique(pngBytes, "imported"))) + `,"sha256":"` + c.digest + `",` + at + `,"createdBy":"alice","updatedBy":"alice"}`))
		file, _ := mw.CreateFormFile("file", "i.png")
		_, _ = file.Write(unique(pngBytes, "imported"))
		_ = mw.Close()
		call("PUT", "/bo/import/medias/importedMedia", form.Bytes(), c.want, "Content-Type", mw.FormDataContentType())
	}
}
