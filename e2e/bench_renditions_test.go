package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/doclib/libs/testkit"
)

// Rendition benchmark settings: images of 4000×3000 (12 MP), rounds of
// thumbnails, requests of the stored-rendition comparison, renditions made
// at once for the RSS figure.
const (
	rendImages     = 4
	rendRounds     = 5
	rendServed     = 300
	rendAtOnce     = 8
	rendRSSLimit   = 300 << 20
	rendThumbRatio = 0.5
	rendServeRatio = 0.7
)

// photo12MP is a 4000×3000 JPEG with gradients and noise (a photo's
// entropy, roughly), different for each seed.
func photo12MP(seed uint64) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 4000, 3000))
	r := rand.New(rand.NewPCG(seed, 7))
	for y := 0; y < 3000; y++ {
		for x := 0; x < 4000; x++ {
			n := uint8(r.IntN(24))
			img.SetRGBA(x, y, color.RGBA{uint8(x/16+int(seed)*40) + n, uint8(y/12) + n, uint8((x+y)/28) + n, 255})
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 88}); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// uploadImage uploads content straight to the media service and returns its id.
func uploadImage(ctx context.Context, client *http.Client, base, name string, content []byte) (string, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", name)
	_, _ = fw.Write(content)
	_ = mw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/bo/medias", &body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	SignAsGateway(req)
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m struct{ ID string }
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &m) != nil {
		return "", fmt.Errorf("upload: %d %s", resp.StatusCode, raw)
	}
	return m.ID, nil
}

// getBody GETs url and returns its body, failing on anything but 200.
func getBody(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b, err
}

// BenchmarkRenditions measures the media service's renditions against
// libvips' own command and MinIO, and its memory while making 8 at once:
// results/renditions.md.
func BenchmarkRenditions(b *testing.B) {
	vt, err := exec.LookPath("vipsthumbnail")
	if err != nil {
		b.Fatal("vipsthumbnail is missing: apt-get install -y libvips-tools (make vips)")
	}
	ctx := context.Background()
	st := NewStack(b, map[string][]string{"media": {fmt.Sprintf("RENDITION_CONCURRENCY=%d", rendAtOnce)}})
	med := st.ServiceURL("media")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: rendAtOnce, DisableCompression: true}}
	dir := b.TempDir()
	var ids []string
	for i := range rendImages + rendAtOnce {
		img := photo12MP(uint64(i + 1))
		if i < rendImages { // the thumbnail comparison's images, for vipsthumbnail too
			testkit.Must(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.jpg", i)), img, 0o644), "write image")
		}
		id, err := uploadImage(ctx, client, med, fmt.Sprintf("%d.jpg", i), img)
		testkit.Must(b, err, "upload")
		ids = append(ids, id)
	}
	loadBefore := loadAvg()
	b.ResetTimer()
	var th thumbResult
	var sv serveResult
	var peak int64
	for b.Loop() {
		th = benchThumbnails(b, client, med, vt, dir, "jpg", rendRounds, ids[:rendImages])
		sv = benchServed(b, client, med, ids[0])
		peak = benchRSS(b, st, client, med, ids[rendImages:])
	}
	b.StopTimer()
	writeRenditionResults(b, th, sv, peak, loadBefore, loadAvg())
}

type thumbResult struct{ service, vips []float64 } // images per second, one figure per round

// benchThumbnails makes a new 320 px WebP of each image per round through
// the service (q differs each round, so each is a new rendition) and with
// vipsthumbnail on the same files (dir/<i>.<ext>) and quality, interleaved.
func benchThumbnails(b *testing.B, client *http.Client, med, vt, dir, ext string, rounds int, ids []string) thumbResult {
	var r thumbResult
	for round := range rounds {
		q := 50 + 10*round%50
		t0 := time.Now()
		for _, id := range ids {
			_, err := getBody(context.Background(), client, fmt.Sprintf("%s/public/medias/%s/download?w=320&format=webp&q=%d", med, id, q))
			testkit.Must(b, err, "rendition")
		}
		r.service = append(r.service, float64(len(ids))/time.Since(t0).Seconds())
		t0 = time.Now()
		for i := range ids {
			in := filepath.Join(dir, fmt.Sprintf("%d.%s", i, ext))
			out := filepath.Join(dir, fmt.Sprintf("%d-%d.webp[Q=%d,strip]", i, round, q))
			if o, err := exec.Command(vt, in, "-s", "320", "-o", out).CombinedOutput(); err != nil {
				b.Fatalf("vipsthumbnail: %v %s", err, o)
			}
		}
		r.vips = append(r.vips, float64(len(ids))/time.Since(t0).Seconds())
	}
	return r
}

type serveResult struct {
	size                int
	service, direct     []float64 // requests per second, one figure per round
	serviceMs, directMs float64
}

// benchServed compares a stored rendition served by the media service with
// the same bytes fetched straight from MinIO by minio-go, interleaved.
func benchServed(b *testing.B, client *http.Client, med, id string) serveResult {
	ctx := context.Background()
	url := med + "/public/medias/" + id + "/download?w=320&format=webp"
	body, err := getBody(ctx, client, url) // made and stored
	testkit.Must(b, err, "rendition")
	s3 := testkit.MinIO(b)
	mc, err := minio.New(s3.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, "")})
	testkit.Must(b, err, "minio client")
	bucket := testkit.UniqueName(b) + "r"
	testkit.Must(b, mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}), "make bucket")
	_, err = mc.PutObject(ctx, bucket, "r.webp", bytes.NewReader(body), int64(len(body)), minio.PutObjectOptions{ContentType: "image/webp"})
	testkit.Must(b, err, "put")
	r := serveResult{size: len(body)}
	for range rendRounds {
		t0 := time.Now()
		for range rendServed {
			_, err := getBody(ctx, client, url)
			testkit.Must(b, err, "served rendition")
		}
		r.service = append(r.service, rendServed/time.Since(t0).Seconds())
		t0 = time.Now()
		for range rendServed {
			obj, err := mc.GetObject(ctx, bucket, "r.webp", minio.GetObjectOptions{})
			testkit.Must(b, err, "GetObject")
			_, err = io.Copy(io.Discard, obj)
			testkit.Must(b, err, "GetObject read")
			_ = obj.Close()
		}
		r.direct = append(r.direct, rendServed/time.Since(t0).Seconds())
	}
	r.serviceMs, r.directMs = 1000/median(r.service), 1000/median(r.direct)
	return r
}

// benchRSS asks for a new rendition of each of 8 other 12-MP images at
// once and samples the media service's RSS every 20 ms meanwhile.
func benchRSS(b *testing.B, st *Stack, client *http.Client, med string, ids []string) int64 {
	pid := st.Pid("media")
	peak := readRSS(b, pid)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			_, err := getBody(context.Background(), client, med+"/public/medias/"+id+"/download?w=320&format=webp")
			testkit.Must(b, err, "rendition")
		})
	}
	go func() { wg.Wait(); close(done) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return max(peak, readRSS(b, pid))
		case <-tick.C:
			peak = max(peak, readRSS(b, pid))
		}
	}
}

func passFail(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**fail**"
}

func writeRenditionResults(b *testing.B, th thumbResult, sv serveResult, peak int64, before, after string) {
	sb := resultHeader("Image renditions: media vs vipsthumbnail and direct MinIO", "BenchmarkRenditions", "bench_renditions_test.go")
	fmt.Fprintf(sb, "| load average (1/5/15 min) before / after | %s / %s |\n", before, after)
	fmt.Fprintf(sb, "| images | 4000×3000 JPEG (12 MP, quality 88, gradients and noise), generated; %d for the thumbnails, %d others for the memory |\n", rendImages, rendAtOnce)
	fmt.Fprintf(sb, "| thumbnails | a new 320 px WebP of each image per round (q 50-90, a new rendition each round): GET on the media port (read from MinIO, made with libvips, stored) vs `vipsthumbnail -s 320 -o x.webp[Q=q,strip]`, one process per image; %d rounds interleaved, median |\n", rendRounds)
	fmt.Fprintf(sb, "| served | the stored 320 px WebP (%d bytes), %d sequential GETs on the media port vs minio-go `GetObject` of the same bytes; %d rounds interleaved, median |\n", sv.size, rendServed, rendRounds)
	fmt.Fprintf(sb, "| memory | VmRSS of the media process sampled every 20 ms while %d renditions of different 12-MP images are asked at once (RENDITION_CONCURRENCY=%d), peak |\n\n", rendAtOnce, rendAtOnce)
	thumb := median(th.service) / median(th.vips)
	serve := median(sv.service) / median(sv.direct)
	fmt.Fprintf(sb, "| path | figure |\n|---|---:|\n")
	fmt.Fprintf(sb, "| media: 12 MP JPEG → 320 px WebP | %.2f images/s (%s) |\n", median(th.service), fmtRates(th.service))
	fmt.Fprintf(sb, "| vipsthumbnail: the same | %.2f images/s (%s) |\n", median(th.vips), fmtRates(th.vips))
	fmt.Fprintf(sb, "| media: stored rendition served | %.0f req/s, %.2f ms each |\n", median(sv.service), sv.serviceMs)
	fmt.Fprintf(sb, "| minio-go → MinIO: the same bytes | %.0f req/s, %.2f ms each |\n", median(sv.direct), sv.directMs)
	fmt.Fprintf(sb, "| media RSS, %d renditions at once | %.0f MiB peak |\n\n", rendAtOnce, float64(peak)/(1<<20))
	fmt.Fprintf(sb, "| target | value | target | result |\n|---|---:|---:|---|\n")
	fmt.Fprintf(sb, "| thumbnails, media / vipsthumbnail | %.2f | ≥ %.1f | %s |\n", thumb, rendThumbRatio, passFail(thumb >= rendThumbRatio))
	fmt.Fprintf(sb, "| stored rendition, media / direct MinIO | %.2f | ≥ %.1f | %s |\n", serve, rendServeRatio, passFail(serve >= rendServeRatio))
	fmt.Fprintf(sb, "| RSS, %d at once | %.0f MiB | < %d MiB | %s |\n", rendAtOnce, float64(peak)/(1<<20), rendRSSLimit>>20, passFail(peak < rendRSSLimit))
	writeResult(b, "renditions.md", sb.String())
	_ = slices.Max(th.service)
}
