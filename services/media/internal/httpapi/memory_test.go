package httpapi_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/media/internal/media"
	"github.com/doclib/services/media/internal/media/miniostore"
)

const mib = 1 << 20

// heapSampler records the peak of HeapInuse while it runs.
type heapSampler struct {
	base, peak uint64
	baseAlloc  uint64
	stop       chan struct{}
	done       sync.WaitGroup
}

func startSampler() *heapSampler {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := &heapSampler{base: ms.HeapInuse, peak: ms.HeapInuse, baseAlloc: ms.TotalAlloc, stop: make(chan struct{})}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s.peak = max(s.peak, ms.HeapInuse)
		}
	}()
	return s
}

// finish returns the peak over the idle heap and the bytes allocated meanwhile.
func (s *heapSampler) finish() (peakOver, allocated uint64) {
	close(s.stop)
	s.done.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return s.peak - s.base, ms.TotalAlloc - s.baseAlloc
}

// generate writes size bytes of a PDF-looking file to w without holding
// them: one 256 KiB block, its first 8 bytes a counter so no two blocks are
// equal.
func generate(w io.Writer, h hash.Hash, size int64) error {
	block := make([]byte, 256<<10)
	_, _ = rand.NewChaCha8([32]byte{42}).Read(block)
	for i := int64(0); i*int64(len(block)) < size; i++ {
		binary.LittleEndian.PutUint64(block, uint64(i))
		if i == 0 {
			copy(block, pdfHead)
		}
		n := min(int64(len(block)), size-i*int64(len(block)))
		h.Write(block[:n])
		if _, err := w.Write(block[:n]); err != nil {
			return err
		}
	}
	return nil
}

// TestLargeUploadInBoundedMemory streams 256 MiB from a generator through a
// real HTTP server to MinIO, and back, and checks the heap never holds
// much more than one upload part.
func TestLargeUploadInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB round trip; skipped with -short")
	}
	// Not parallel: the heap of the whole test binary is measured. The
	// collector runs often so the peak shows what the upload holds, not
	// garbage not yet reclaimed (minio-go's chunk signing makes ~30 MiB of
	// short-lived garbage per 256 MiB; with GOGC=100 the heap may reach about
	// twice the live size before a collection). TotalAlloc is reported too.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	const size = 256 * mib
	a := newAPIOn(t, media.Config{MaxSize: 300 * mib}, testkit.MinIO(t))
	srv := httptest.NewServer(a.h)
	defer srv.Close()

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	sent := sha256.New()
	go func() {
		fw, err := mw.CreateFormFile("file", "big.pdf")
		if err == nil {
			err = generate(fw, sent, size)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, _ := http.NewRequest("POST", srv.URL+"/bo/medias", pr)
	signAsGateway(req)
	req.Header.Set("Content-Type", mw.FormDataContentType())

	s := startSampler()
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	testkit.Must(t, err, "upload")
	elapsed := time.Since(start)
	upPeak, upAlloc := s.finish()
	var m adminMedia
	testkit.Must(t, json.NewDecoder(resp.Body).Decode(&m), "decode")
	resp.Body.Close()
	if resp.StatusCode != 201 || m.Size != size {
		t.Fatalf("upload: status %d, record %+v; want 201 and %d bytes", resp.StatusCode, m, size)
	}
	t.Logf("upload of 256 MiB: %s; peak heap in use %.1f MiB over idle; %.1f MiB allocated in all (part buffer %d MiB)",
		elapsed.Round(time.Millisecond), float64(upPeak)/mib, float64(upAlloc)/mib, miniostore.PartSize/mib)

	s = startSampler()
	resp, err = http.Get(srv.URL + "/public/medias/" + m.ID + "/download")
	testkit.Must(t, err, "download")
	got := sha256.New()
	n, err := io.Copy(got, resp.Body)
	resp.Body.Close()
	testkit.Must(t, err, "read download")
	downPeak, downAlloc := s.finish()
	want := hex.EncodeToString(sent.Sum(nil))
	if n != size || hex.EncodeToString(got.Sum(nil)) != want || resp.Header.Get("ETag") != `"`+want+`"` {
		t.Errorf("download: %d bytes, sha256 %x, ETag %s; want %d bytes with sha256 %s", n, got.Sum(nil), resp.Header.Get("ETag"), size, want)
	}
	t.Logf("download of 256 MiB: peak heap in use %.1f MiB over idle; %.1f MiB allocated in all",
		float64(downPeak)/mib, float64(downAlloc)/mib)

	if limit := uint64(miniostore.PartSize + 8*mib); upPeak > limit {
		t.Errorf("upload peak heap %.1f MiB over idle, want at most %.0f MiB (one part + 8 MiB)", float64(upPeak)/mib, float64(limit)/mib)
	}
	if upAlloc > 4*miniostore.PartSize {
		t.Errorf("upload allocated %.1f MiB in all, want at most %d MiB: something copies the file", float64(upAlloc)/mib, 4*miniostore.PartSize/mib)
	}
	if downPeak > 8*mib {
		t.Errorf("download peak heap %.1f MiB over idle, want at most 8 MiB", float64(downPeak)/mib)
	}
}
