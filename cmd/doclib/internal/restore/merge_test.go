package restore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/doclib/cmd/doclib/internal/client"
	"github.com/doclib/cmd/doclib/internal/library"
)

// fakeCatalog answers the document import routes as the catalog does: a
// record it lacks is created, the same one left, another one refused (409
// import_conflict); the entry route stops at the first refused.
type fakeCatalog struct {
	mu      sync.Mutex
	records map[string]string // "d1/7" (a revision) or "d1": its JSON
}

// put stores raw under key unless another record is there. A revision
// ("d1/7") goes only to a document the installation lacks: into one it
// has, only the same revision is accepted (ImportRevision).
func (f *fakeCatalog) put(key, raw string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, _, isRevision := strings.Cut(key, "/")
	_, docExists := f.records[id]
	switch had, ok := f.records[key]; {
	case !ok && isRevision && docExists:
		return http.StatusConflict
	case !ok:
		f.records[key] = raw
		return http.StatusCreated
	case had == raw:
		return http.StatusOK
	}
	return http.StatusConflict
}

func (f *fakeCatalog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/bo/import/documents/"), "/")
	status := http.StatusCreated
	switch {
	case len(parts) == 2 && parts[1] == "entry":
		var e struct {
			Document  json.RawMessage   `json:"document"`
			Revisions []json.RawMessage `json:"revisions"`
		}
		_ = json.Unmarshal(body, &e)
		for _, rev := range e.Revisions {
			var v struct{ Version int }
			_ = json.Unmarshal(rev, &v)
			if status = f.put(fmt.Sprintf("%s/%d", parts[0], v.Version), string(rev)); status == http.StatusConflict {
				break
			}
		}
		if status != http.StatusConflict {
			status = f.put(parts[0], string(e.Document))
		}
	case len(parts) == 3:
		status = f.put(parts[0]+"/"+parts[2], string(body))
	default:
		status = f.put(parts[0], string(body))
	}
	if status == http.StatusConflict {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"code":"import_conflict"}`)
		return
	}
	w.WriteHeader(status)
}

// TestMergeCreatesWhatTheInstallationLacks (review finding 2; review
// final-data, finding 6): merging, after an interrupted import (the
// document absent, its revision 7 there otherwise), revisions 8 and 9 it
// lacks and the document are created, revision 7 kept, listed; into a
// document the installation has, no revision goes (the catalog refuses
// them, 409): those and the document are kept. The same whether the entry
// goes in one request or one record at a time.
func TestMergeCreatesWhatTheInstallationLacks(t *testing.T) {
	t.Parallel()
	rev := func(v int, title string) string {
		return fmt.Sprintf(`{"version":%d,"document":{"id":"d1","title":%q}}`, v, title)
	}
	var d library.Document
	d.Document = json.RawMessage(`{"id":"d1","title":"v9"}`)
	for v := 1; v <= 9; v++ {
		d.Revisions = append(d.Revisions, json.RawMessage(rev(v, fmt.Sprintf("v%d", v))))
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, limit string
		docThere    bool
		created     bool // revisions 8, 9 and the document
		kept        []string
	}{
		{"interrupted import, one request", "one", false, true, []string{"revision d1/7"}},
		{"interrupted import, one record at a time", "each", false, true, []string{"revision d1/7"}},
		{"document there, one request", "one", true, false, []string{"revision d1/7", "revision d1/8", "revision d1/9", "document d1"}},
		{"document there, one record at a time", "each", true, false, []string{"revision d1/7", "revision d1/8", "revision d1/9", "document d1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cat := &fakeCatalog{records: map[string]string{"d1/7": rev(7, "theirs")}}
			for v := 1; v <= 6; v++ {
				cat.records[fmt.Sprintf("d1/%d", v)] = string(d.Revisions[v-1])
			}
			if c.docThere {
				cat.records["d1"] = `{"id":"d1","title":"theirs"}`
			}
			srv := httptest.NewServer(cat)
			defer srv.Close()
			limit := map[string]int{"one": maxEntryBody, "each": 0}[c.limit]
			in := &Importer{c: client.New(srv.URL, "t"), log: slog.New(slog.DiscardHandler), merge: true, entryLimit: limit,
				result: Result{Created: map[string]int{}, Unchanged: map[string]int{}, Kept: map[string]int{}}}
			if err := in.document(context.Background(), "documents/d1.json", "d1", d, raw); err != nil {
				t.Fatal(err)
			}
			for _, v := range []int{8, 9} {
				if got, ok := cat.records[fmt.Sprintf("d1/%d", v)]; ok != c.created || (ok && got != string(d.Revisions[v-1])) {
					t.Errorf("revision %d the installation lacked: %q (there %v), want there %v, the archive's", v, got, ok, c.created)
				}
			}
			if wantDoc := map[bool]string{true: "v9", false: "theirs"}[c.created]; cat.records["d1/7"] != rev(7, "theirs") || !strings.Contains(cat.records["d1"], wantDoc) {
				t.Errorf("records %v; want revision 7 theirs, the document %s", cat.records, wantDoc)
			}
			if kept := in.result.KeptIDs; !slices.Equal(kept, c.kept) {
				t.Errorf("kept %v, want %v", kept, c.kept)
			}
		})
	}
}

// TestTooLargeNamesTheLimitOfItsKind (review finding 9): a 413 for a
// document names the catalog's limit, not the media setting.
func TestTooLargeNamesTheLimitOfItsKind(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		_, _ = io.WriteString(w, `{"code":"payload_too_large"}`)
	}))
	defer srv.Close()
	in := &Importer{c: client.New(srv.URL, "t")}
	for kind, want := range map[string]string{"media": "MEDIA_MAX_UPLOAD_SIZE", "revision": "8 MiB"} {
		_, _, err := in.request(context.Background(), "e", kind, "x", "/bo/import/x", client.JSON([]byte("{}")))
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), want) || (kind != "media" && strings.Contains(err.Error(), "MEDIA_")) {
			t.Errorf("a %s refused with 413: %v; want ErrTooLarge naming %s only", kind, err, want)
		}
	}
}
