package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

const (
	offRounds      = 3
	offCovers      = 4   // PDFs per cover round
	offCoverPages  = 20  // pages of each
	offTextPages   = 100 // pages of the text extraction's PDF
	offDocs        = 1000
	offClients     = 8 // wrk connections on the bundle, and the RSS clients
	offWrkDuration = 6 * time.Second
	offCoverRatio  = 0.5
	offTextLimit   = 2 * time.Second
	offBundleRatio = 0.8
	offRSSGrowth   = 32 << 20 // the gateway's RSS may grow by this much while 8 clients download
)

// BenchmarkOfflineApp measures what an app's offline use costs
// (results/offline.md): a PDF's cover at 320 px against vipsthumbnail on
// the same file, the text extraction of a 100-page PDF, and the bundle of
// 1,000 documents through the gateway against nginx serving the same
// bytes, with the gateway's RSS while 8 clients download it.
func BenchmarkOfflineApp(b *testing.B) {
	vt, err := exec.LookPath("vipsthumbnail")
	if err != nil {
		b.Fatal("vipsthumbnail is missing: apt-get install -y libvips-tools (make vips)")
	}
	nginxBin, wrkBin := listingTools(b)
	st := NewStack(b, map[string][]string{"gateway": {"PUBLIC_RATE_LIMIT=0"}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: offClients, DisableCompression: true}}
	dir := b.TempDir()
	loadBefore := loadAvg()
	var res offlineResult
	for b.Loop() {
		res.covers = benchCovers(b, st, client, vt, dir)
		res.texts = benchText(b, st, client)
		res.bundle = benchBundle(b, st, client, nginxBin, wrkBin)
	}
	res.loadBefore, res.loadAfter = loadBefore, loadAvg()
	writeResult(b, "offline.md", res.markdown())
}

type offlineResult struct {
	covers                thumbResult
	texts                 []time.Duration
	bundle                bundleBench
	loadBefore, loadAfter string
}

// benchCovers makes a new 320 px WebP cover of each of offCovers PDFs per
// round (benchThumbnails) on the media port (read from MinIO, the first page drawn by the
// sandboxed reader, resized with libvips, stored) and with vipsthumbnail
// on the same files and quality, interleaved.
func benchCovers(b *testing.B, st *Stack, client *http.Client, vt, dir string) thumbResult {
	med := st.ServiceURL("media")
	var ids []string
	for i := range offCovers {
		pdf := unique(pdfOfPages(offCoverPages), fmt.Sprintf("cover-%d", i))
		testkit.Must(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.pdf", i)), pdf, 0o644), "write PDF")
		ids = append(ids, st.Upload(fmt.Sprintf("%d.pdf", i), pdf))
	}
	return benchThumbnails(b, client, med, vt, dir, "pdf", offRounds, ids)
}

// benchText uploads a new 100-page PDF per round and times its first
// GET /public/medias/:id/text on the media port: the extraction in the
// sandboxed reader, stored, compressed.
func benchText(b *testing.B, st *Stack, client *http.Client) []time.Duration {
	med := st.ServiceURL("media")
	var took []time.Duration
	for round := range offRounds {
		id := st.Upload("long.pdf", unique(pdfOfPages(offTextPages), fmt.Sprintf("text-%d", round)))
		t0 := time.Now()
		body, err := getBody(context.Background(), client, med+"/public/medias/"+id+"/text")
		testkit.Must(b, err, "text")
		took = append(took, time.Since(t0))
		if !bytes.Contains(body, []byte(wordOnPage(offTextPages))) {
			b.Fatalf("the text of the %d-page PDF lacks its last page's word", offTextPages)
		}
	}
	return took
}

type bundleBench struct {
	seed                      listingSeed
	size, gzSize              int
	gateway, nginx            []wrkRun
	rssBefore, rssPeak, rssAt int64 // the gateway's, while wrk downloads through it
	catalogPeak               int64
}

// benchBundle seeds 1,000 documents, then downloads the gzipped bundle
// with 8 connections through the gateway and from nginx serving the same
// bytes (gzip_static), rounds interleaved, sampling the gateway's and the
// catalog's RSS during the gateway's rounds.
func benchBundle(b *testing.B, st *Stack, client *http.Client, nginxBin, wrkBin string) bundleBench {
	var r bundleBench
	r.seed = newListingSeeder(b, st, 8).seedTo(b, offDocs)
	req, err := http.NewRequest("GET", st.URL+"/public/bundle", nil)
	testkit.Must(b, err, "request")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	testkit.Must(b, err, "bundle")
	gz, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	testkit.Must(b, err, "bundle body")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" {
		b.Fatalf("GET /public/bundle: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	testkit.Must(b, err, "gunzip")
	plain, err := io.ReadAll(zr)
	testkit.Must(b, err, "gunzip")
	r.size, r.gzSize = len(plain), len(gz)
	ngx := startListingNginx(b, nginxBin, map[string]nginxFile{"/bundle": {body: plain, gz: gz}})
	cfg := listingSettings{threads: 2, conns: offClients}
	hdr := []string{"Accept-Encoding: gzip"}
	gw, cat := st.Pid("gateway"), st.Pid("catalog")
	r.rssBefore = readRSS(b, gw)
	for range offRounds {
		r.nginx = append(r.nginx, runListingWrk(b, wrkBin, cfg, offWrkDuration, listingTarget{name: "nginx", url: ngx + "/bundle", headers: hdr}))
		stop := sampleRSS(b, gw, cat, &r.rssPeak, &r.catalogPeak)
		r.gateway = append(r.gateway, runListingWrk(b, wrkBin, cfg, offWrkDuration, listingTarget{name: "gateway", url: st.URL + "/public/bundle", headers: hdr}))
		stop()
	}
	r.rssAt = readRSS(b, gw)
	return r
}

// sampleRSS samples the VmRSS of two processes every 50 ms into their
// peaks until the returned function is called.
func sampleRSS(b *testing.B, a, c int, peakA, peakC *int64) func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			*peakA, *peakC = max(*peakA, readRSS(b, a)), max(*peakC, readRSS(b, c))
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func rpsOf(runs []wrkRun) []float64 {
	var out []float64
	for _, r := range runs {
		out = append(out, r.rps)
	}
	return out
}

func (r offlineResult) markdown() string {
	sb := resultHeader("Offline app: PDF covers, PDF text, the bundle", "BenchmarkOfflineApp", "bench_offline_test.go")
	fmt.Fprintf(sb, "| load average (1/5/15 min) before / after | %s / %s |\n", r.loadBefore, r.loadAfter)
	if high := highLoad(r.loadBefore) || highLoad(r.loadAfter); high {
		fmt.Fprintf(sb, "| **taken at high load** | the 1-minute load was above 3 on 2 CPUs: other work ran beside the benchmark, and the figures are noisy |\n")
	}
	fmt.Fprintf(sb, "| covers | a new 320 px WebP of the first page of each of %d generated %d-page PDFs per round (q changes each round): GET on the media port vs `vipsthumbnail -s 320 -o x.webp[Q=q,strip]`, one process per file; %d rounds interleaved, median |\n", offCovers, offCoverPages, offRounds)
	fmt.Fprintf(sb, "| text | the first GET /public/medias/:id/text of a new generated %d-page PDF on the media port (extracted in the sandboxed reader, stored, compressed); %d rounds, median |\n", offTextPages, offRounds)
	b := r.bundle
	fmt.Fprintf(sb, "| bundle | GET /public/bundle of %d documents (the listing bench's mix) with `Accept-Encoding: gzip`, %d bytes (%d gzipped), wrk -t2 -c%d -d%s through the gateway vs nginx serving the same bytes (gzip_static); %d rounds interleaved, median; VmRSS of the gateway and the catalog sampled every 50 ms during the gateway's rounds |\n\n",
		b.seed.stored, b.size, b.gzSize, offClients, offWrkDuration, offRounds)
	cover := median(r.covers.service) / median(r.covers.vips)
	var texts []float64
	for _, d := range r.texts {
		texts = append(texts, d.Seconds())
	}
	text := time.Duration(median(texts) * float64(time.Second))
	bundle := median(rpsOf(b.gateway)) / median(rpsOf(b.nginx))
	growth := b.rssPeak - b.rssBefore
	fmt.Fprintf(sb, "| path | figure |\n|---|---:|\n")
	fmt.Fprintf(sb, "| media: %d-page PDF → 320 px WebP cover | %.2f covers/s (%s) |\n", offCoverPages, median(r.covers.service), fmtRates(r.covers.service))
	fmt.Fprintf(sb, "| vipsthumbnail: the same | %.2f covers/s (%s) |\n", median(r.covers.vips), fmtRates(r.covers.vips))
	fmt.Fprintf(sb, "| media: text of a %d-page PDF | %s (%s s) |\n", offTextPages, text.Round(time.Millisecond), fmtRates(texts))
	fmt.Fprintf(sb, "| gateway: bundle, gzip | %.1f req/s (%s) |\n", median(rpsOf(b.gateway)), fmtRates(rpsOf(b.gateway)))
	fmt.Fprintf(sb, "| nginx: the same bytes | %.1f req/s (%s) |\n", median(rpsOf(b.nginx)), fmtRates(rpsOf(b.nginx)))
	fmt.Fprintf(sb, "| gateway RSS before / peak / after | %.0f / %.0f / %.0f MiB |\n", mib(b.rssBefore), mib(b.rssPeak), mib(b.rssAt))
	fmt.Fprintf(sb, "| catalog RSS peak | %.0f MiB |\n\n", mib(b.catalogPeak))
	fmt.Fprintf(sb, "| target | value | target | result |\n|---|---:|---:|---|\n")
	fmt.Fprintf(sb, "| cover, media / vipsthumbnail | %.2f | ≥ %.1f | %s |\n", cover, offCoverRatio, passFail(cover >= offCoverRatio))
	fmt.Fprintf(sb, "| text of a %d-page PDF | %s | < %s | %s |\n", offTextPages, text.Round(time.Millisecond), offTextLimit, passFail(text < offTextLimit))
	fmt.Fprintf(sb, "| bundle, gateway / nginx req/s | %.2f | ≥ %.1f | %s |\n", bundle, offBundleRatio, passFail(bundle >= offBundleRatio))
	fmt.Fprintf(sb, "| gateway RSS growth, %d clients | %.1f MiB | < %d MiB | %s |\n", offClients, mib(growth), offRSSGrowth>>20, passFail(growth < offRSSGrowth))
	return sb.String()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// highLoad reports whether a load average line's 1-minute figure is over
// 3 (wrk and one server alone make about 3 on this 2-CPU machine).
func highLoad(loads string) bool {
	var one float64
	_, err := fmt.Sscan(strings.Fields(loads + " ?")[0], &one)
	return err == nil && one > 3
}
