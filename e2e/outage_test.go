package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/testkit"
)

// The rows "NATS" and "MinIO" of the README's "When a part is down": every
// process stays ready (the chart takes no pod out of its Service), the
// routes that need the part degrade as the table says, the others work,
// and a service that starts during the outage starts and is ready.

// allReady fails t unless every process of st answers /readyz with 200
// (the gateway on both listeners).
func allReady(t *testing.T, st *Stack, during string) {
	t.Helper()
	urls := map[string]string{"gateway admin": st.AdminURL}
	for _, s := range order {
		urls[s] = st.ServiceURL(s)
	}
	for s, u := range urls {
		res, err := http.Get(u + "/readyz")
		if err != nil {
			t.Errorf("%s: %s /readyz: %v", during, s, err)
			continue
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %s /readyz = %d, want 200", during, s, res.StatusCode)
		}
	}
}

// readyStatus is the status word of service s's /readyz body.
func readyStatus(t testing.TB, st *Stack, s string) string {
	t.Helper()
	res, err := http.Get(st.ServiceURL(s) + "/readyz")
	if err != nil {
		return err.Error()
	}
	defer res.Body.Close()
	var body struct{ Status string }
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		return err.Error()
	}
	return body.Status
}

func wantStatus(t *testing.T, r Response, want int, what string) {
	t.Helper()
	if r.Status != want {
		t.Errorf("%s: %d %s, want %d", what, r.Status, r.Body, want)
	}
}

func TestNATSDown(t *testing.T) {
	st := NewStack(t, nil)
	doc := tagged(st, "c", "a", "b")
	pdf := st.Upload("guide.pdf", pdfBytes)
	gone := st.Upload("gone.png", pngBytes)
	var link docJSON
	st.Must("POST", "/bo/documents", `{"type":"LINK","title":"L","url":"https://x.org","tagsIds":[]}`, 201).JSON(t, &link)

	st.StopNATS()
	Eventually(t, 10*time.Second, "the data services report NATS down", func() bool {
		return readyStatus(t, st, "taxonomy") == "degraded" && readyStatus(t, st, "catalog") == "degraded" &&
			readyStatus(t, st, "media") == "degraded"
	})
	allReady(t, st, "NATS down")

	// Deletions answer 204; their events wait in the outboxes.
	st.Must("DELETE", "/bo/tags/a", nil, 204)
	st.Must("DELETE", "/bo/documents/"+link.ID, nil, 204)
	st.Must("DELETE", "/bo/medias/"+gone, nil, 204)
	// Everything else works.
	wantStatus(t, st.Req("GET", "/public/documents", nil), 200, "public listing")
	wantStatus(t, st.Req("GET", "/public/tags-categories", nil), 200, "tag categories")
	wantStatus(t, st.Req("GET", "/public/medias/"+pdf+"/download", nil), 200, "media download")
	st.Must("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "P", "fileId": pdf, "tagsIds": []string{"b"}}, 201)
	st.Upload("new.pdf", unique(pdfBytes, "new"))

	// A service (re)started during the outage starts and is ready; its
	// consumers start once NATS is back.
	st.Stop("catalog")
	st.Start("catalog")
	allReady(t, st, "NATS down, catalog restarted")
	if got := publicTags(st, doc); got != "a,b" {
		t.Fatalf("with NATS down the tag already left the document: %s", got)
	}

	st.StartNATS()
	Eventually(t, 30*time.Second, "tag a leaves the document after NATS returns", func() bool { return publicTags(st, doc) == "b" })
	Eventually(t, 30*time.Second, "the data services report ready", func() bool {
		return readyStatus(t, st, "taxonomy") == "ready" && readyStatus(t, st, "catalog") == "ready" &&
			readyStatus(t, st, "media") == "ready"
	})
}

func TestMinIODown(t *testing.T) {
	st := NewStack(t, nil)
	s3 := testkit.OwnMinIO(t)
	st.UseMinIO(s3.Creds, testkit.UniqueName(t))
	pdf := st.Upload("guide.pdf", pdfBytes)
	var pdfDoc docJSON
	st.Must("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "P", "fileId": pdf, "tagsIds": []string{}}, 201).JSON(t, &pdfDoc)

	s3.Stop()
	allReady(t, st, "MinIO down")
	Eventually(t, 10*time.Second, "media reports the object store down", func() bool { return readyStatus(t, st, "media") == "degraded" })

	// Bytes: 503 within seconds, nothing half-written.
	start := time.Now()
	if r := st.PostFile("new.pdf", pdfBytes); r.Status != 503 {
		t.Errorf("upload with MinIO down: %d %s, want 503", r.Status, r.Body)
	}
	wantStatus(t, st.Req("GET", "/public/medias/"+pdf+"/download", nil), 503, "media download")
	wantStatus(t, st.Req("GET", "/public/documents/"+pdfDoc.ID+"/download", nil), 503, "PDF document download")
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the three refused byte routes took %s; want seconds", d)
	}
	var medias []any
	st.Must("GET", "/bo/medias", nil, 200).JSON(t, &medias)
	if len(medias) != 1 {
		t.Errorf("after a refused upload: %d media, want 1", len(medias))
	}
	// Records and everything else work.
	wantStatus(t, st.Req("GET", "/public/medias/"+pdf, nil), 200, "media record")
	wantStatus(t, st.Req("GET", "/public/documents", nil), 200, "public listing")
	wantStatus(t, st.Req("GET", "/public/documents/"+pdfDoc.ID+"/detail", nil), 200, "PDF document detail")
	st.Must("POST", "/bo/tags-categories", `{"id":"c","name":"C"}`, 201)
	st.Must("POST", "/bo/documents", map[string]any{"type": "PDF", "title": "P2", "fileId": pdf, "tagsIds": []string{}}, 201)

	// Media restarted during the outage, on a bucket that does not exist
	// yet: it starts, is ready, and makes the bucket once MinIO is back.
	st.Stop("media")
	st.SetEnv("media", "S3_BUCKET="+testkit.UniqueName(t))
	st.Start("media")
	allReady(t, st, "MinIO down, media restarted")

	s3.Start()
	var last Response
	back := unique(pdfBytes, "back")
	Eventually(t, 30*time.Second, "an upload succeeds once MinIO is back", func() bool {
		last = st.PostFile("back.pdf", back)
		if last.Status != 201 && last.Status != 503 {
			t.Fatalf("upload while the bucket is being made: %d %s, want 503 or 201", last.Status, last.Body)
		}
		return last.Status == 201
	})
	var m struct{ ID string }
	last.JSON(t, &m)
	if r := st.Req("GET", "/public/medias/"+m.ID+"/download", nil); r.Status != 200 || string(r.Body) != string(back) {
		t.Errorf("download after MinIO returned: %d", r.Status)
	}
}

// UseMinIO points media at another object store and bucket, restarting it.
func (st *Stack) UseMinIO(c devserver.MinIOCredentials, bucket string) {
	st.t.Helper()
	st.Stop("media")
	st.SetEnv("media", "S3_ENDPOINT="+c.Endpoint, "S3_ACCESS_KEY="+c.AccessKey, "S3_SECRET_KEY="+c.SecretKey, "S3_BUCKET="+bucket)
	st.Start("media")
	// Media is ready before its bucket exists (made in the background);
	// wait for it, or the first upload races the bucket's creation.
	Eventually(st.t, 30*time.Second, "media reports its object store ready", func() bool {
		return readyStatus(st.t, st, "media") == "ready"
	})
}

// SetEnv adds settings to service s's environment (later ones win) for its
// next start.
func (st *Stack) SetEnv(s string, kv ...string) {
	for _, e := range kv {
		if !strings.Contains(e, "=") {
			panic(fmt.Sprintf("SetEnv(%s): %q is not NAME=value", s, e))
		}
	}
	st.env[s] = append(st.env[s], kv...)
}
