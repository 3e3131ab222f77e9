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

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/media/mongostore"
)

// TestMinIOStopped stops the storage during an upload, then checks that
// every route that needs it answers 503 in bounded time while the others
// still work, and that a download cut by the storage's end is never a
// silently short file.
func TestMinIOStopped(t *testing.T) {
	t.Parallel()
	s3 := testkit.OwnMinIO(t) // its own, so it can be stopped
	a := newAPIOn(t, media.Config{}, s3.Creds)
	small := sample(pdfHead, 100_000, 1)
	before := a.mustUpload("before.pdf", small)
	big := sample(pdfHead, 40<<20, 2)
	bigMedia := a.mustUpload("big.pdf", big)

	// 1. The storage stops while an upload is half-way: 36 MiB read, so its
	// first 16 MiB part is stored (parts go one after the other).
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	halfway, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		fw, _ := mw.CreateFormFile("file", "during.pdf")
		_, err := fw.Write(sample(pdfHead, 36<<20, 3))
		close(halfway)
		<-stopped
		for err == nil {
			_, err = fw.Write(make([]byte, 1<<20)) // until the server stops reading
		}
	}()
	go func() {
		<-halfway
		s3.Stop()
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
	s3.Start()
	testkit.Must(t, a.blobs.Ready(context.Background()), "ready again")
	keys, err := a.blobs.Keys(context.Background())
	testkit.Must(t, err, "keys")
	if len(keys) != 2 {
		t.Errorf("objects after the outage %v, want the 2 uploaded before", keys)
	}
	// The upload cut by the outage could not abort its multipart upload
	// (the storage was down): the sweep does, now that it is back
	// (issue 16 item 3).
	// The upload the outage cut could not abort its multipart upload (the
	// storage was down): its parts stay under MinIO's multipart area until
	// the sweep removes them, now that the storage is back (issue 16 item
	// 3). MinIO does not list such uploads bucket-wide, so its files are
	// counted.
	if n := s3.MultipartParts(); n == 0 {
		t.Logf("the cut upload left no part in MinIO's multipart area: the sweep has nothing to show")
	}
	testkit.Must(t, a.svc.Sweep(context.Background()), "sweep once the storage is back")
	if n := s3.MultipartParts(); n != 0 {
		t.Errorf("after the sweep: %d part(s) of unfinished multipart uploads in MinIO, want none", n)
	}
	if n, _ := a.store.Collection().Database().Collection(mongostore.UploadsCollection).CountDocuments(context.Background(), bson.M{}); n != 0 {
		t.Errorf("after the sweep: %d upload intent(s) left, want none", n)
	}
	srv := httptest.NewServer(a.h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/public/medias/" + bigMedia.ID + "/download")
	testkit.Must(t, err, "download")
	defer resp.Body.Close()
	h := sha256.New()
	_, err = io.CopyN(h, resp.Body, 1<<20)
	testkit.Must(t, err, "first MiB")
	go s3.Stop()
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
