package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/doclib/libs/testkit"
)

// The media benchmark's parameters.
const (
	benchFileSize  = 64 << 20 // bytes per transfer
	benchBlockSize = 1 << 20  // the generator repeats one block of this size
	benchPartSize  = 16 << 20 // minio-go part size, as in the media service
	benchRounds    = 7        // interleaved rounds per b.N iteration
	benchTarget    = 0.70     // gateway / direct, the target
)

// benchBlock is 1 MiB of random bytes starting with a PDF header, so the
// media service's sniffing sees an allowed, binary type.
func benchBlock(tb testing.TB) []byte {
	blk := make([]byte, benchBlockSize)
	_, err := rand.Read(blk)
	testkit.Must(tb, err, "random block")
	copy(blk, "%PDF-1.7\n")
	return blk
}

// repeatReader yields n bytes by repeating blk; it costs a memmove per read.
type repeatReader struct {
	blk []byte
	n   int64
	off int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.off)]
	done := 0
	for done < len(p) {
		i := int((r.off + int64(done)) % int64(len(r.blk)))
		done += copy(p[done:], r.blk[i:])
	}
	r.off += int64(done)
	return done, nil
}

// multipartFile streams a benchFileSize file made of blk as the part
// "file" of a multipart body, written by a goroutine as it is read. Its last
// 16 bytes are random: the media service stores the same bytes once, and
// every upload of the benchmark must store a file.
func multipartFile(blk []byte) (io.Reader, *multipart.Writer) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "bench.pdf")
		if err == nil {
			_, err = io.Copy(part, &repeatReader{blk: blk, n: benchFileSize - 16})
		}
		if err == nil {
			_, err = part.Write([]byte(rand.Text()[:16]))
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw
}

// multipartUpload streams a benchFileSize file as the part "file" of a
// multipart/form-data POST to url and returns the media id.
func multipartUpload(ctx context.Context, client *http.Client, url string, blk []byte, auth bool) (string, error) {
	body, mw := multipartFile(blk)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	if auth {
		req.Header.Set("Authorization", "Bearer "+Token)
	} else { // straight to the service: sign as the gateway would
		SignAsGateway(req)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("upload to %s: %d %s", url, resp.StatusCode, raw)
	}
	var m struct {
		ID   string `json:"id"`
		Size int64  `json:"size"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || m.ID == "" {
		return "", fmt.Errorf("upload answer %s: %v", raw, err)
	}
	return m.ID, nil
}

// download GETs url and discards the body, checking its length.
func download(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || n != benchFileSize {
		return fmt.Errorf("download %s: status %d, %d bytes", url, resp.StatusCode, n)
	}
	return nil
}

// mibps is the throughput of one benchFileSize transfer that took d.
func mibps(d time.Duration) float64 {
	return float64(benchFileSize) / (1 << 20) / d.Seconds()
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func loadAvg() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// BenchmarkMediaTransfer moves a 64 MiB file up and down through the
// gateway (multipart POST /bo/medias, GET /public/medias/:id/download) and
// straight to the same MinIO with minio-go (PutObject of unknown size with
// 16 MiB parts, as the media service does; GetObject), interleaved
// direct, media service port, gateway, for benchRounds rounds per
// iteration. It reports the median MiB/s of each and the gateway/direct
// ratios, and writes bench/results/media.md. The media service's own port
// splits the gateway's cost from the media service's; in-process SHA-256
// and multipart parsing rates show what those steps cost on this machine.
//
// The gateway's /public rate limit is off (PUBLIC_RATE_LIMIT=0).
func BenchmarkMediaTransfer(b *testing.B) {
	ctx := context.Background()
	st := NewStack(b, map[string][]string{"gateway": {"PUBLIC_RATE_LIMIT=0"}})
	s3 := testkit.MinIO(b)
	mc, err := minio.New(s3.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s3.AccessKey, s3.SecretKey, "")})
	testkit.Must(b, err, "minio client")
	bucket := testkit.UniqueName(b)
	testkit.Must(b, mc.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}), "make bucket")
	b.Cleanup(func() { _ = mc.RemoveBucket(context.Background(), bucket) })
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
	blk := benchBlock(b)
	gw, med := st.AdminURL, st.ServiceURL("media")

	type path struct{ name, label string }
	paths := []path{
		{"direct", "minio-go → MinIO"},
		{"work", "minio-go → MinIO, after multipart parsing + SHA-256 in the test process (upload only)"},
		{"media", "media service port → MinIO"},
		{"gateway", "gateway → media → MinIO"},
	}
	up, down := map[string][]float64{}, map[string][]float64{}
	upload := func(p string) (string, time.Duration) {
		t0 := time.Now()
		switch p {
		case "direct":
			key := "bench/" + testkit.UniqueName(b)
			_, err := mc.PutObject(ctx, bucket, key, &repeatReader{blk: blk, n: benchFileSize}, -1,
				minio.PutObjectOptions{ContentType: "application/pdf", PartSize: benchPartSize})
			testkit.Must(b, err, "direct PutObject")
			return key, time.Since(t0)
		case "work":
			// The media service's CPU work without its HTTP hop and Mongo
			// write: the file is parsed out of a multipart stream and hashed
			// on its way to PutObject.
			body, mw := multipartFile(blk)
			part, err := multipart.NewReader(body, mw.Boundary()).NextPart()
			testkit.Must(b, err, "multipart part")
			h := sha256.New()
			key := "bench/" + testkit.UniqueName(b)
			_, err = mc.PutObject(ctx, bucket, key, io.TeeReader(part, h), -1,
				minio.PutObjectOptions{ContentType: "application/pdf", PartSize: benchPartSize})
			testkit.Must(b, err, "work PutObject")
			_ = h.Sum(nil)
			return key, time.Since(t0)
		case "media":
			id, err := multipartUpload(ctx, client, med+"/bo/medias", blk, false)
			testkit.Must(b, err, "media upload")
			return id, time.Since(t0)
		default:
			id, err := multipartUpload(ctx, client, gw+"/bo/medias", blk, true)
			testkit.Must(b, err, "gateway upload")
			return id, time.Since(t0)
		}
	}
	get := func(p, id string) time.Duration {
		t0 := time.Now()
		switch p {
		case "direct", "work":
			obj, err := mc.GetObject(ctx, bucket, id, minio.GetObjectOptions{})
			testkit.Must(b, err, "GetObject")
			n, err := io.Copy(io.Discard, obj)
			testkit.Must(b, err, "GetObject read")
			_ = obj.Close()
			if n != benchFileSize {
				b.Fatalf("direct download: %d bytes", n)
			}
		case "media":
			testkit.Must(b, download(ctx, client, med+"/public/medias/"+id+"/download"), "media download")
		default:
			testkit.Must(b, download(ctx, client, gw+"/public/medias/"+id+"/download"), "gateway download")
		}
		return time.Since(t0)
	}
	remove := func(p, id string) {
		if p == "direct" || p == "work" {
			testkit.Must(b, mc.RemoveObject(ctx, bucket, id, minio.RemoveObjectOptions{}), "remove object")
			return
		}
		st.Must("DELETE", "/bo/medias/"+id, nil, http.StatusNoContent)
	}

	// Warm-up: connections, the Mongo collections, MinIO's caches.
	for _, p := range paths {
		id, _ := upload(p.name)
		get(p.name, id)
		remove(p.name, id)
	}
	loadBefore := loadAvg()
	b.ResetTimer()
	rounds := 0
	for b.Loop() {
		for range benchRounds {
			rounds++
			for _, p := range paths {
				id, d := upload(p.name)
				up[p.name] = append(up[p.name], mibps(d))
				if p.name != "work" {
					down[p.name] = append(down[p.name], mibps(get(p.name, id)))
				}
				b.StopTimer()
				remove(p.name, id)
				b.StartTimer()
			}
		}
	}
	b.StopTimer()
	loadAfter := loadAvg()

	// What the media service does on top of a plain PutObject, measured
	// in this process, one core: SHA-256 and multipart parsing.
	shaRate := cpuRate(func() {
		h := sha256.New()
		_, _ = io.Copy(h, &repeatReader{blk: blk, n: benchFileSize})
	})
	mpRate := cpuRate(func() {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			part, _ := mw.CreateFormFile("file", "bench.pdf")
			_, _ = io.Copy(part, &repeatReader{blk: blk, n: benchFileSize})
			pw.CloseWithError(mw.Close())
		}()
		mr := multipart.NewReader(pr, mw.Boundary())
		p, err := mr.NextPart()
		testkit.Must(b, err, "multipart part")
		_, _ = io.Copy(io.Discard, p)
	})

	med4 := func(m map[string][]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			out[k] = median(v)
		}
		return out
	}
	mu, md := med4(up), med4(down)
	upRatio, downRatio := mu["gateway"]/mu["direct"], md["gateway"]/md["direct"]
	b.ReportMetric(mu["direct"], "up-direct-MiB/s")
	b.ReportMetric(mu["work"], "up-direct+cpu-MiB/s")
	b.ReportMetric(mu["media"], "up-media-MiB/s")
	b.ReportMetric(mu["gateway"], "up-gateway-MiB/s")
	b.ReportMetric(md["direct"], "down-direct-MiB/s")
	b.ReportMetric(md["media"], "down-media-MiB/s")
	b.ReportMetric(md["gateway"], "down-gateway-MiB/s")
	b.ReportMetric(upRatio, "up-gateway/direct")
	b.ReportMetric(downRatio, "down-gateway/direct")
	b.ReportMetric(shaRate, "sha256-MiB/s")
	b.ReportMetric(mpRate, "multipart-MiB/s")

	verdict := func(r float64) string {
		if r >= benchTarget {
			return "**pass**"
		}
		return "**fail**"
	}
	// ms per 64 MiB from a MiB/s median.
	ms := func(rate float64) float64 { return float64(benchFileSize) / (1 << 20) / rate * 1000 }
	sb := resultHeader("Media transfer: gateway vs direct MinIO", "BenchmarkMediaTransfer", "bench_media_test.go")
	fmt.Fprintf(sb, "| load average (1/5/15 min) before / after | %s / %s |\n", loadBefore, loadAfter)
	fmt.Fprintf(sb, "| file | %d MiB, a 1 MiB crypto/rand block (PDF header) repeated, streamed from a generator |\n", benchFileSize>>20)
	fmt.Fprintf(sb, "| rounds | %d, interleaved direct, direct + CPU work, media port, gateway; median of each |\n", rounds)
	fmt.Fprintf(sb, "| direct upload | minio-go v7.4.1 `PutObject`, size -1, `PartSize` 16 MiB (as the media service) |\n")
	fmt.Fprintf(sb, "| gateway upload | multipart POST /bo/medias (io.Pipe + multipart.Writer, chunked) |\n")
	fmt.Fprintf(sb, "| downloads | `GetObject` / GET /public/medias/:id/download, body to io.Discard |\n")
	fmt.Fprintf(sb, "| stack | `PUBLIC_RATE_LIMIT=0` on the gateway; everything on this machine |\n\n")
	fmt.Fprintf(sb, "| path | upload MiB/s | ms per 64 MiB | download MiB/s | ms per 64 MiB |\n|---|---:|---:|---:|---:|\n")
	for _, p := range paths {
		if p.name == "work" {
			fmt.Fprintf(sb, "| %s | %.0f | %.0f | — | — |\n", p.label, mu[p.name], ms(mu[p.name]))
			continue
		}
		fmt.Fprintf(sb, "| %s | %.0f | %.0f | %.0f | %.0f |\n", p.label, mu[p.name], ms(mu[p.name]), md[p.name], ms(md[p.name]))
	}
	fmt.Fprintf(sb, "\n| ratio gateway / direct | value | target | result |\n|---|---:|---:|---|\n")
	fmt.Fprintf(sb, "| upload | %.2f | ≥ %.2f | %s |\n", upRatio, benchTarget, verdict(upRatio))
	fmt.Fprintf(sb, "| download | %.2f | ≥ %.2f | %s |\n\n", downRatio, benchTarget, verdict(downRatio))
	fmt.Fprintf(sb, "Upload time split (medians, ms per 64 MiB): direct %.0f; multipart parsing + SHA-256 in line %+.0f; "+
		"the rest of the media service (its HTTP hop, sniffing, Mongo insert) %+.0f; the gateway hop %+.0f.\n\n",
		ms(mu["direct"]), ms(mu["work"])-ms(mu["direct"]), ms(mu["media"])-ms(mu["work"]), ms(mu["gateway"])-ms(mu["media"]))
	fmt.Fprintf(sb, "Download time split (medians, ms per 64 MiB): direct %.0f; media service on top of it %+.0f; gateway hop on top of that %+.0f.\n\n",
		ms(md["direct"]), ms(md["media"])-ms(md["direct"]), ms(md["gateway"])-ms(md["media"]))
	fmt.Fprintf(sb, "In-process, one core: SHA-256 %.0f MiB/s (%.0f ms per 64 MiB); multipart write + parse %.0f MiB/s (%.0f ms per 64 MiB).\n\n",
		shaRate, ms(shaRate), mpRate, ms(mpRate))
	fmt.Fprintf(sb, "All samples (MiB/s):\n\n")
	for _, p := range paths {
		fmt.Fprintf(sb, "- %s: upload %s; download %s\n", p.name, fmtRates(up[p.name]), fmtRates(down[p.name]))
	}
	writeResult(b, "media.md", sb.String())
	b.Logf("\n%s", sb.String())
}

// cpuRate runs f (which processes benchFileSize bytes) three times and
// returns the best MiB/s.
func cpuRate(f func()) float64 {
	best := time.Duration(1<<63 - 1)
	for range 3 {
		t0 := time.Now()
		f()
		best = min(best, time.Since(t0))
	}
	return mibps(best)
}

func fmtRates(xs []float64) string {
	if len(xs) == 0 {
		return "—"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(s, ", ")
}

// resultHeader starts a results file: its title, the benchmark that writes
// it (and its file), and the rows every results file has.
func resultHeader(title, bench, file string) *strings.Builder {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s\n\n", title)
	fmt.Fprintf(&sb, "`%s` (e2e/%s), written by the benchmark itself.\n\n", bench, file)
	fmt.Fprintf(&sb, "| | |\n|---|---|\n")
	fmt.Fprintf(&sb, "| date | %s |\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&sb, "| nproc | %d |\n", runtime.NumCPU())
	fmt.Fprintf(&sb, "| go | %s %s/%s |\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return &sb
}

// writeResult writes bench/results/name at the repository's root.
func writeResult(tb testing.TB, name, content string) {
	dir := filepath.Join("..", "bench", "results")
	testkit.Must(tb, os.MkdirAll(dir, 0o755), "results dir")
	testkit.Must(tb, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644), "write "+name)
}
