package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/doclib/libs/testkit"
)

// The rows of the README's "When a part is down" that outage_test.go (NATS,
// MinIO) and mongo_outage_test.go (MongoDB's 5 s bound) do not measure: a
// service stopped (on Kubernetes, no ready pod behind its Service: its
// connections are refused) or paused (make dev's way to watch a row: it
// accepts connections and never answers), the catalog's own MongoDB down,
// and deletions during a MinIO outage.

// pause freezes service s (SIGSTOP) until the returned function resumes it;
// the test's end resumes it too, so the stack can stop.
func pause(t *testing.T, st *Stack, s string) (resume func()) {
	t.Helper()
	pid := st.Pid(s)
	testkit.Must(t, syscall.Kill(pid, syscall.SIGSTOP), "pause "+s)
	paused := true
	resume = func() {
		if paused {
			paused = false
			testkit.Must(t, syscall.Kill(pid, syscall.SIGCONT), "resume "+s)
		}
	}
	t.Cleanup(resume)
	return resume
}

// metricValue is the value of one series of service s's /metrics (0 when
// the series is absent), e.g.
// doclib_events_retried_total{consumer="catalog-tag-deleted",reason="unavailable"}.
func metricValue(t *testing.T, st *Stack, s, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(scrape(t, st, s), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			testkit.Must(t, err, "metric "+series)
			return f
		}
	}
	return 0
}

// readyz is the status of service s's /readyz ("gateway" for both of the
// gateway's listeners, which must agree).
func readyz(t *testing.T, st *Stack, s string) int {
	t.Helper()
	bases := []string{st.ServiceURL(s)}
	if s == "gateway" {
		bases = []string{st.URL, st.AdminURL}
	}
	status := 0
	client := &http.Client{Timeout: 5 * time.Second}
	for _, base := range bases {
		res, err := client.Get(base + "/readyz")
		if err != nil {
			return 0
		}
		res.Body.Close()
		if status != 0 && res.StatusCode != status {
			t.Errorf("%s /readyz: %d on one listener, %d on the other", s, status, res.StatusCode)
		}
		status = res.StatusCode
	}
	return status
}

// TestCatalogDown: the row "catalog". Its routes answer 502 at the gateway
// while it is stopped and 504 after UPSTREAM_TIMEOUT while it is paused;
// a media deletion, which must ask it who uses the media, answers 503 and
// changes nothing either way; the gateway stays ready. (Its consumers'
// backlog: TestBacklogAppliedWhenCatalogReturns.)
func TestCatalogDown(t *testing.T) {
	const upstreamTimeout = 10 * time.Second // 30 s by default; more than the media's 5 s question
	st := NewStack(t, map[string][]string{"gateway": {"UPSTREAM_TIMEOUT=" + upstreamTimeout.String()}})
	m := st.Upload("kept.pdf", unique(pdfBytes, "catalog-down"))
	var d docJSON
	st.Must("POST", "/bo/documents", `{"type":"LINK","title":"T","url":"https://x.org"}`, 201).JSON(t, &d)
	st.Req("GET", "/public/documents", nil) // kept by the gateway's micro-cache
	mediaUnchanged := func(during string) {
		t.Helper()
		if r := st.BO("GET", "/bo/medias/"+m, nil); r.Status != 200 {
			t.Errorf("%s: the media after its refused deletion: %d, want 200", during, r.Status)
		}
		if r := st.Req("GET", "/public/medias/"+m+"/download", nil); r.Status != 200 || string(r.Body) != string(unique(pdfBytes, "catalog-down")) {
			t.Errorf("%s: the media's download after its refused deletion: %d", during, r.Status)
		}
	}
	documentRoutes := []struct{ method, path, body string }{
		{"GET", "/public/documents", ""},
		{"GET", "/public/documents/" + d.ID + "/detail", ""},
		{"GET", "/public/sync", ""},
		{"GET", "/bo/documents", ""},
		{"POST", "/bo/documents", `{"type":"LINK","title":"T2","url":"https://x.org"}`},
	}

	st.Stop("catalog")
	time.Sleep(200 * time.Millisecond) // past PUBLIC_CACHE_TTL: the gateway asks the catalog again
	if s := readyz(t, st, "gateway"); s != 200 {
		t.Errorf("catalog stopped: gateway /readyz %d, want 200", s)
	}
	for _, c := range documentRoutes {
		var body any
		if c.body != "" {
			body = c.body
		}
		if r := st.BO(c.method, c.path, body); r.Status != 502 || r.Problem(t).Code != "bad_gateway" {
			t.Errorf("catalog stopped: %s %s: %d %s, want 502 bad_gateway", c.method, c.path, r.Status, r.Body)
		}
	}
	start := time.Now()
	if r := st.BO("DELETE", "/bo/medias/"+m, nil); r.Status != 503 || r.Header.Get("Retry-After") == "" {
		t.Errorf("catalog stopped: media deletion %d %s, want 503 with Retry-After", r.Status, r.Body)
	}
	t.Logf("catalog stopped: the media deletion answered in %s", time.Since(start).Round(time.Millisecond))
	mediaUnchanged("catalog stopped")

	st.Start("catalog")
	resume := pause(t, st, "catalog")
	if s := readyz(t, st, "gateway"); s != 200 {
		t.Errorf("catalog paused: gateway /readyz %d, want 200", s)
	}
	start = time.Now()
	r := st.BO("GET", "/bo/documents", nil)
	took := time.Since(start)
	if r.Status != 504 || r.Problem(t).Code != "upstream_timeout" || took < upstreamTimeout-time.Second || took > upstreamTimeout+5*time.Second {
		t.Errorf("catalog paused: GET /bo/documents %d in %s, want 504 after UPSTREAM_TIMEOUT (%s); %s", r.Status, took.Round(100*time.Millisecond), upstreamTimeout, r.Body)
	}
	start = time.Now()
	r = st.BO("DELETE", "/bo/medias/"+m, nil)
	if took := time.Since(start); r.Status != 503 || took > 9*time.Second {
		t.Errorf("catalog paused: media deletion %d in %s, want 503 within the media's 5 s question; %s", r.Status, took.Round(100*time.Millisecond), r.Body)
	}
	mediaUnchanged("catalog paused")
	resume()

	// Back: the media is used by nothing and goes.
	st.Must("DELETE", "/bo/medias/"+m, nil, 204)
}

// TestServiceDownDuringADocumentWrite: the row "taxonomy or media, during
// a document write", with the service stopped and paused: a create and a
// PATCH that need it answer 503 naming it, within seconds, and change
// nothing; reads of documents keep working.
func TestServiceDownDuringADocumentWrite(t *testing.T) {
	st := NewStack(t, nil)
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"C"}`, 201)
	st.Must("POST", "/bo/tags", `{"id":"t","name":"T","categoryId":"c"}`, 201)
	pdf := st.Upload("w.pdf", unique(pdfBytes, "write"))
	var d docJSON
	st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":"Kept","fileId":%q,"tagsIds":["t"]}`, pdf), 201).JSON(t, &d)
	writes := []struct{ method, path, body string }{
		{"POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":"New","fileId":%q,"tagsIds":["t"]}`, pdf)},
		{"PATCH", "/bo/documents/" + d.ID, fmt.Sprintf(`{"type":"PDF","title":"Changed","fileId":%q,"tagsIds":["t"]}`, pdf)},
	}
	down := func(service, how string) {
		t.Helper()
		for _, w := range writes {
			start := time.Now()
			r := st.BO(w.method, w.path, w.body)
			took := time.Since(start)
			if r.Status != 503 || !strings.Contains(r.Problem(t).Detail, service) || took > 8*time.Second {
				t.Errorf("%s %s: %s %s: %d in %s, want 503 naming %s within ~5 s; %s", service, how, w.method, w.path,
					r.Status, took.Round(100*time.Millisecond), service, r.Body)
			}
		}
		var list []docJSON
		st.Must("GET", "/bo/documents", nil, 200).JSON(t, &list)
		if len(list) != 1 || list[0].Title != "Kept" {
			t.Errorf("%s %s: documents after the refused writes %+v, want only the one kept as it was", service, how, list)
		}
		var got docJSON
		if r := st.Req("GET", "/public/documents/"+d.ID+"/detail", nil); r.Status != 200 {
			t.Errorf("%s %s: public detail %d, want 200", service, how, r.Status)
		} else if r.JSON(t, &got); got.Title != "Kept" {
			t.Errorf("%s %s: public detail titled %q, want Kept", service, how, got.Title)
		}
		if r := st.Req("GET", "/public/documents", nil); r.Status != 200 {
			t.Errorf("%s %s: public listing %d, want 200", service, how, r.Status)
		}
	}
	for _, s := range []string{"media", "taxonomy"} {
		st.Stop(s)
		down(s, "stopped")
		st.Start(s)
		resume := pause(t, st, s)
		down(s, "paused")
		resume()
	}
	st.Must(writes[1].method, writes[1].path, writes[1].body, 200)
}

// TestTaxonomyDownWhenATagEventArrives: the row "taxonomy, when a tag or
// category event arrives" (the catalog asks taxonomy whether the id was
// created anew), and the sync's promise with taxonomy down (README,
// Decisions, Sync): a first sync by a catalog holding no categories is
// 503, a later one omits tagCategories, which come once taxonomy is back.
func TestTaxonomyDownWhenATagEventArrives(t *testing.T) {
	st := NewStack(t, nil)
	doc := tagged(st, "c", "a", "b")
	first, r := st.sync("")
	if r.Status != 200 || first.TagCategories == nil {
		t.Fatalf("first sync: %d %s", r.Status, r.Body)
	}
	const retried = `doclib_events_retried_total{consumer="catalog-tag-deleted",reason="unavailable"}`
	const deadLettered = `doclib_events_dead_lettered_total{consumer="catalog-tag-deleted"}`

	// The event waits in the stream while the catalog is stopped; taxonomy
	// goes down before the catalog comes back to it.
	st.Stop("catalog")
	st.Must("DELETE", "/bo/tags/a", nil, 204)
	Eventually(t, 10*time.Second, "taxonomy publishes the tag's deletion", func() bool {
		return metricValue(t, st, "taxonomy", `doclib_events_published_total{subject="library.taxonomy.tag.deleted"}`) == 1
	})
	st.Stop("taxonomy")
	st.Start("catalog")

	Eventually(t, 30*time.Second, "the catalog retries the event as unavailable", func() bool {
		return metricValue(t, st, "catalog", retried) >= 3
	})
	if got := publicTags(st, doc); got != "a,b" {
		t.Errorf("with taxonomy down the event was applied anyway: tags %s", got)
	}
	if n := metricValue(t, st, "catalog", deadLettered); n != 0 {
		t.Errorf("%v event(s) dead-lettered while taxonomy was down, want none", n)
	}
	if _, r := st.sync(""); r.Status != 503 {
		t.Errorf("first sync from a catalog holding no categories, taxonomy down: %d %s, want 503", r.Status, r.Body)
	}
	if p, r := st.sync(first.Cursor); r.Status != 200 || p.TagCategories != nil {
		t.Errorf("later sync, taxonomy down: %d, tagCategories %v; want 200 without them", r.Status, p.TagCategories)
	}

	st.Start("taxonomy")
	Eventually(t, 70*time.Second, "the tag leaves the document once taxonomy answers (retried at least once a minute)", func() bool {
		return publicTags(st, doc) == "b"
	})
	Eventually(t, 10*time.Second, "the later sync brings the categories and the changed document", func() bool {
		p, r := st.sync(first.Cursor)
		return r.Status == 200 && p.TagCategories != nil && len(p.Documents) == 1
	})
	if _, r := st.sync(""); r.Status != 200 {
		t.Errorf("first sync once taxonomy is back: %d", r.Status)
	}
	if n := metricValue(t, st, "catalog", deadLettered); n != 0 {
		t.Errorf("%v event(s) dead-lettered for taxonomy's outage, want none", n)
	}
}

// TestCatalogsMongoDBDown: the row "MongoDB", for what
// TestMongoDBOutageAnswersWithinTheBound leaves out: the service's /readyz
// fails (so the chart takes its pods out of their Service), whether
// MongoDB refuses connections or never answers, while the other processes
// stay ready; and the catalog's consumers keep retrying their events until
// it is back, none dead-lettered.
func TestCatalogsMongoDBDown(t *testing.T) {
	db := newDBProxy(t)
	st := NewStack(t, map[string][]string{"catalog": {"MONGODB_URI=" + db.URI()}})
	doc := tagged(st, "c", "a", "b")
	const retried = `doclib_events_retried_total{consumer="catalog-tag-deleted",reason="unavailable"}`
	const deadLettered = `doclib_events_dead_lettered_total{consumer="catalog-tag-deleted"}`

	for _, outage := range []struct {
		name  string
		start func()
	}{{"refused", db.refuse}, {"hung", db.blackhole}} {
		outage.start()
		Eventually(t, 10*time.Second, "MongoDB "+outage.name+": the catalog's /readyz fails", func() bool {
			return readyz(t, st, "catalog") == http.StatusServiceUnavailable
		})
		for _, s := range []string{"gateway", "taxonomy", "media"} {
			if got := readyz(t, st, s); got != 200 {
				t.Errorf("catalog's MongoDB %s: %s /readyz %d, want 200", outage.name, s, got)
			}
		}
		if outage.name == "refused" {
			before := metricValue(t, st, "catalog", retried)
			st.Must("DELETE", "/bo/tags/a", nil, 204) // taxonomy's own database answers
			Eventually(t, 30*time.Second, "the catalog retries the tag event as unavailable", func() bool {
				return metricValue(t, st, "catalog", retried) >= before+3
			})
		}
		db.refuse()
		db.listen()
		Eventually(t, 30*time.Second, "the catalog is ready again once MongoDB is back", func() bool {
			return readyz(t, st, "catalog") == 200
		})
	}
	Eventually(t, 70*time.Second, "the event waited for MongoDB: the tag leaves the document", func() bool {
		return publicTags(st, doc) == "b"
	})
	if n := metricValue(t, st, "catalog", deadLettered); n != 0 {
		t.Errorf("%v event(s) dead-lettered for the catalog's MongoDB outage, want none", n)
	}
}

// TestMediaDeletionDuringAMinIOOutage: the row "MinIO" says deletions work:
// a media deletion answers 204 at once and the record goes; its bytes,
// which MinIO cannot remove then, go once it is back (the sweep), so
// nothing is left behind.
func TestMediaDeletionDuringAMinIOOutage(t *testing.T) {
	st := NewStack(t, nil)
	s3 := testkit.OwnMinIO(t)
	bucket := testkit.UniqueName(t)
	st.UseMinIO(s3.Creds, bucket)
	gone := st.Upload("gone.pdf", unique(pdfBytes, "gone"))
	kept := st.Upload("kept.pdf", unique(pdfBytes, "kept"))
	var d docJSON
	st.Must("POST", "/bo/documents", fmt.Sprintf(`{"type":"PDF","title":"P","fileId":%q}`, kept), 201).JSON(t, &d)

	s3.Stop()
	start := time.Now()
	st.Must("DELETE", "/bo/medias/"+gone, nil, 204)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("media deletion with MinIO down took %s, want it at once", took.Round(100*time.Millisecond))
	}
	st.Must("DELETE", "/bo/documents/"+d.ID, nil, 204)
	if r := st.Req("GET", "/public/medias/"+gone, nil); r.Status != 404 {
		t.Errorf("the deleted media's record with MinIO down: %d, want 404", r.Status)
	}
	if r := st.BO("GET", "/bo/medias/"+gone, nil); r.Status != 404 {
		t.Errorf("the deleted media's back-office record with MinIO down: %d, want 404", r.Status)
	}

	s3.Start()
	mc, err := minio.New(s3.Creds.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3.Creds.AccessKey, s3.Creds.SecretKey, "")})
	testkit.Must(t, err, "MinIO client")
	var objects []string
	Eventually(t, 90*time.Second, "the deleted media's bytes leave MinIO once it is back", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		objects = objects[:0]
		for o := range mc.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			if o.Err != nil {
				return false
			}
			objects = append(objects, o.Key)
		}
		return len(objects) == 1
	})
	if r := st.Req("GET", "/public/medias/"+kept+"/download", nil); r.Status != 200 {
		t.Errorf("the kept media's download: %d", r.Status)
	}
}
