package e2e

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

// TestMinIOOutageDuringAnUploadLeavesNothing (issue 16 item 3): MinIO stops
// while an upload through the gateway is half-way (two 16 MiB parts sent);
// the upload is a 503, and once MinIO is back the media service's sweep
// removes the parts the upload could not abort (on main they stayed in
// MinIO's multipart area for good).
func TestMinIOOutageDuringAnUploadLeavesNothing(t *testing.T) {
	st := NewStack(t, nil)
	s3 := testkit.OwnMinIO(t)
	st.UseMinIO(s3.Creds, testkit.UniqueName(t))

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		fw, _ := mw.CreateFormFile("file", "during.pdf")
		_, err := fw.Write(append(append([]byte(nil), pdfBytes...), bytes.Repeat([]byte("x"), 36<<20)...))
		s3.Stop() // 36 MiB read: the first parts are stored
		for err == nil {
			_, err = fw.Write(make([]byte, 1<<20)) // until the upload is refused
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest("POST", st.AdminURL+"/bo/medias", pr)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+Token)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != 503 {
			t.Errorf("upload cut by the outage: %d, want 503", resp.StatusCode)
		}
	}
	_ = pr.Close()
	if n := s3.MultipartParts(); n == 0 {
		t.Log("the cut upload left no part in MinIO's multipart area: the sweep has nothing to show")
	}
	s3.Start()
	Eventually(t, 150*time.Second, "the sweep removes the parts of the cut upload once MinIO is back", func() bool {
		return s3.MultipartParts() == 0
	})
	var medias []any
	st.Must("GET", "/bo/medias", nil, 200).JSON(t, &medias)
	if len(medias) != 0 {
		t.Errorf("%d media after a refused upload, want none", len(medias))
	}
}
