package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
)

// ownMinIO starts a MinIO for this test alone, so it can be stopped.
type ownMinIO struct {
	t       *testing.T
	bin     string
	console string
	dir     string
	cred    devserver.MinIOCredentials
	proc    *devserver.Process
}

func startOwnMinIO(t *testing.T) *ownMinIO {
	t.Helper()
	bin, err := devserver.BinDir()
	testkit.Must(t, err, "bin dir")
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free addr")
	console, err := devserver.FreeAddr()
	testkit.Must(t, err, "free addr")
	o := &ownMinIO{t: t, bin: bin, console: console, dir: t.TempDir(),
		cred: devserver.MinIOCredentials{Endpoint: addr, AccessKey: "outage", SecretKey: "outage-secret"}}
	o.start()
	t.Cleanup(func() { o.proc.Stop() })
	return o
}

func (o *ownMinIO) start() {
	o.t.Helper()
	p, err := devserver.MinIO(context.Background(), o.bin, o.cred.Endpoint, o.console, o.dir, o.cred, nil)
	testkit.Must(o.t, err, "start MinIO")
	o.proc = p
}

// TestMinIOStopped stops the storage during an upload, then checks that
// every route that needs it answers 503 in bounded time while the others
// still work, and that a download cut by the storage's end is never a
// silently short file.
func TestMinIOStopped(t *testing.T) {
	t.Parallel()
	s3 := startOwnMinIO(t)
	a := newAPIOn(t, media.Config{}, s3.cred)
	small := sample(pdfHead, 100_000, 1)
	before := a.mustUpload("before.pdf", small)
	big := sample(pdfHead, 40<<20, 2)
	bigMedia := a.mustUpload("big.pdf", big)

	// 1. The storage stops while an upload is half-way (one part sent).
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	halfway, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		fw, _ := mw.CreateFormFile("file", "during.pdf")
		_, err := fw.Write(sample(pdfHead, 20<<20, 3))
		close(halfway)
		<-stopped
		for err == nil {
			_, err = fw.Write(make([]byte, 1<<20)) // until the server stops reading
		}
	}()
	go func() {
		<-halfway
		s3.proc.Stop()
		close(stopped)
	}()
	upload := httptest.NewRequest("POST", "/bo/medias", pr)
	upload.Header.Set("Content-Type", mw.FormDataContentType())
	var r response
	within(t, 25*time.Second, "upload with the storage stopped half-way", func() {
		r = a.serve(upload)
	})
	_ = pr.Close()
	p := r.problem(t, 503, "unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	t.Logf("upload answer: %s", p.Detail)
	n, err := a.store.Collection().CountDocuments(context.Background(), bson.M{})
	testkit.Must(t, err, "count")
	if n != 2 {
		t.Errorf("%d records, want only the 2 made before the outage", n)
	}

	// 2. While the storage is down.
	within(t, 10*time.Second, "download with the storage down", func() {
		a.get("/public/medias/"+before.ID+"/download").problem(t, 503, "unavailable")
	})
	within(t, 10*time.Second, "upload with the storage down", func() {
		a.upload(part{"file", "x.pdf", "", small}).problem(t, 503, "unavailable")
	})
	a.must("GET", "/bo/medias/"+before.ID, 200) // records need only the database
	a.must("GET", "/internal/medias?ids="+before.ID, 200)
	if err := a.blobs.Ready(context.Background()); err == nil {
		t.Error("readiness passes with the storage down")
	}

	// 3. The storage is back, then stops during a download.
	s3.start()
	testkit.Must(t, a.blobs.Ready(context.Background()), "ready again")
	keys, err := a.blobs.Keys(context.Background())
	testkit.Must(t, err, "keys")
	if len(keys) != 2 {
		t.Errorf("objects after the outage %v, want the 2 uploaded before", keys)
	}
	if up, _ := a.blobs.IncompleteUploads(context.Background()); up != 0 {
		t.Logf("%d unfinished multipart upload(s) kept by the storage (it was down when they were aborted; MinIO expires them)", up)
	}
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/public/medias/" + bigMedia.ID + "/download")
	testkit.Must(t, err, "download")
	defer resp.Body.Close()
	h := sha256.New()
	_, err = io.CopyN(h, resp.Body, 1<<20)
	testkit.Must(t, err, "first MiB")
	go s3.proc.Stop()
	var read int64
	within(t, 30*time.Second, "download with the storage stopping", func() {
		var n int64
		n, err = io.Copy(h, resp.Body)
		read = n + 1<<20
	})
	switch {
	case err != nil:
		t.Logf("download cut after %d of %d bytes: %v", read, len(big), err)
	case read != int64(len(big)) || hex.EncodeToString(h.Sum(nil)) != sum(big):
		t.Errorf("download ended without error after %d of %d bytes: a silently short or wrong file", read, len(big))
	default:
		t.Log("the storage finished sending the file before it stopped")
	}
}
