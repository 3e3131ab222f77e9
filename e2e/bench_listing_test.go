package e2e

// BenchmarkListingVsNginx measures the public reads through the gateway
// (the listing as it is, gzipped and revalidated to a 304, a detail, the
// tag categories) against nginx serving the same bytes as static files
// (gzip_static for the compressed ones), with wrk, in the same run; then
// the catalog's RSS over a run at the largest size.
// bench/README.md tells how to run it and what the figures mean; the
// figures are written to bench/results/listing.md.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/testkit"
)

// listingSettings are the knobs of the listing benchmark, overridable by
// environment variables (see bench/README.md).
type listingSettings struct {
	sizes       []int
	threads     int
	conns       int
	duration    time.Duration
	rssDuration time.Duration
	rounds      int
	seedWorkers int
	out         string
	cpus        benchCPUs
}

func loadListingSettings(b *testing.B) listingSettings {
	s := listingSettings{sizes: []int{1000, 10000}, threads: 2, conns: 64, duration: 6 * time.Second,
		rssDuration: 60 * time.Second, rounds: 3, seedWorkers: 8, out: filepath.Join("..", "bench", "results", "listing.md")}
	if v := os.Getenv("BENCH_SIZES"); v != "" {
		s.sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("BENCH_SIZES=%q: want a comma-separated list of positive counts", v)
			}
			s.sizes = append(s.sizes, n)
		}
		sort.Ints(s.sizes)
	}
	for name, p := range map[string]*time.Duration{"BENCH_DURATION": &s.duration, "BENCH_RSS_DURATION": &s.rssDuration} {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < time.Second {
				b.Fatalf("%s=%q: want a duration of 1s or more", name, v)
			}
			*p = d
		}
	}
	for name, p := range map[string]*int{"BENCH_ROUNDS": &s.rounds, "BENCH_CONNECTIONS": &s.conns, "BENCH_THREADS": &s.threads} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*p = n
		}
	}
	if v := os.Getenv("BENCH_OUT"); v != "" {
		s.out = v
	}
	return s
}

// benchCPUs is how a load test splits the machine: wrk alone on the load
// CPU, everything else (this process, the backing servers, the services,
// nginx) on the server CPUs. Sharing every core, wrk's threads competed
// with the servers and with the stack's background work (FerretDB, MinIO,
// the relays), and the tails measured that competition more than the
// server: nginx's own p99 moved between 4 and 50 ms from run to run.
type benchCPUs struct {
	pinned       bool
	load, server string // taskset CPU lists
	taskset      string
}

// splitCPUs pins this process, every thread of it, to all CPUs but the
// first (children started later inherit it) and keeps the first for wrk.
// BENCH_PIN=0, a single CPU or no taskset shares every CPU.
func splitCPUs(b *testing.B) benchCPUs {
	n := runtime.NumCPU()
	taskset, err := exec.LookPath("taskset")
	if os.Getenv("BENCH_PIN") == "0" || n < 2 || err != nil {
		return benchCPUs{}
	}
	c := benchCPUs{pinned: true, load: "0", server: "1", taskset: taskset}
	if n > 2 {
		c.server = "1-" + strconv.Itoa(n-1)
	}
	if out, err := exec.Command(taskset, "-a", "-p", "-c", c.server, strconv.Itoa(os.Getpid())).CombinedOutput(); err != nil {
		b.Fatalf("pin the benchmark to CPUs %s: %v\n%s", c.server, err, out)
	}
	return c
}

// listingTools finds nginx and wrk, or fails with how to install them.
func listingTools(b *testing.B) (nginx, wrk string) {
	b.Helper()
	find := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
		return ""
	}
	nginx, wrk = find("nginx"), find("wrk")
	var missing []string
	if nginx == "" {
		missing = append(missing, "nginx")
	}
	if wrk == "" {
		missing = append(missing, "wrk")
	}
	if len(missing) > 0 {
		b.Fatalf("BenchmarkListingVsNginx needs %s, which is not installed. Install it with\n"+
			"    sudo apt-get update && sudo apt-get install -y nginx-light wrk\n"+
			"(Debian/Ubuntu packages; `make bench` does this for you when run as root)", strings.Join(missing, " and "))
	}
	return nginx, wrk
}

func BenchmarkListingVsNginx(b *testing.B) {
	nginxBin, wrkBin := listingTools(b)
	cfg := loadListingSettings(b)

	// The per-client-IP rate limit of /public (100 req/s by default) would
	// answer 429 to a load test from one address: it is disabled here.
	// Otherwise the services run as users run them (issue 22): the default
	// log level (info, its access log sampled), no trace exporter, metrics
	// on; their output goes to files, as a container runtime keeps it. A
	// second gateway at LOG_LEVEL=warn, on the same services, is measured
	// beside the default one.
	cfg.cpus = splitCPUs(b)
	logDir := b.TempDir()
	st := NewStackLoggingTo(b, map[string][]string{"gateway": {"PUBLIC_RATE_LIMIT=0"}, "catalog": {listingRelayPoll}}, logDir)
	quietGateway := startQuietGateway(b, st, logDir)
	listingSeeder := newListingSeeder(b, st, cfg.seedWorkers)

	rep := &listingReport{cfg: cfg, started: time.Now(), database: listingDatabase(b)}
	rep.versions(nginxBin, wrkBin)
	for _, n := range cfg.sizes {
		b.Run(fmt.Sprintf("docs=%d", n), func(b *testing.B) {
			seed := listingSeeder.seedTo(b, n)
			res := measureListingSize(b, st, quietGateway, nginxBin, wrkBin, cfg, n, listingSeeder.detailID, listingSeeder.plainID)
			res.seed = seed
			rep.sizes = append(rep.sizes, res)
			for _, t := range res.targets {
				m := res.median(t.name)
				b.ReportMetric(m.rps, t.name+"_req/s")
				b.ReportMetric(m.p50.Seconds()*1000, t.name+"_p50_ms")
				b.ReportMetric(m.p99.Seconds()*1000, t.name+"_p99_ms")
			}
			for _, k := range listingRoutes {
				rr, pr := res.ratios("gateway_"+k, "nginx_"+k)
				b.ReportMetric(rr, "gateway/nginx_"+k+"_req/s_ratio")
				b.ReportMetric(pr, "gateway/nginx_"+k+"_p99_ratio")
			}
		})
	}
	rep.rss = measureCatalogRSS(b, st, wrkBin, cfg, listingSeeder.detailID)
	rep.finished = time.Now()
	md := rep.markdown()
	if err := os.MkdirAll(filepath.Dir(cfg.out), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Logf("figures written to %s\n%s", cfg.out, md)
}

// ---- seeding ----

type listingSeed struct {
	added    int
	took     time.Duration
	workers  int
	byType   map[string]int
	listSize int   // bytes of the public listing
	stored   int   // documents the catalog holds (retries may add some)
	retries  int64 // creates retried after a 5xx, so far
}

type listingSeeder struct {
	st       *Stack
	client   *http.Client
	workers  int
	tags     []string
	pdfID    string
	pngID    string
	count    int
	detailID string // a MARKDOWN document with tags, whose detail (with related documents) is measured
	plainID  string // a MARKDOWN document without tags: its detail has no related documents
	byType   map[string]int
	retries  atomic.Int64
	started  time.Time // makes the Idempotency-Keys of this run its own
}

func newListingSeeder(b *testing.B, st *Stack, workers int) *listingSeeder {
	s := &listingSeeder{st: st, workers: workers, byType: map[string]int{}, started: time.Now(),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}}
	for c := 0; c < 4; c++ {
		cat := fmt.Sprintf("bench-cat-%d", c)
		st.Must("POST", "/bo/tags-categories", fmt.Sprintf(`{"id":%q,"name":"Catégorie %d"}`, cat, c), 201)
		for i := 0; i < 5; i++ {
			id := fmt.Sprintf("bench-tag-%d-%d", c, i)
			st.Must("POST", "/bo/tags", fmt.Sprintf(`{"id":%q,"name":"Étiquette %d.%d","categoryId":%q}`, id, c, i, cat), 201)
			s.tags = append(s.tags, id)
		}
	}
	s.pdfID = st.Upload("guide.pdf", pdfBytes)
	s.pngID = st.Upload("schema.png", pngBytes)
	return s
}

var listingWords = strings.Fields("vaccination enfants adolescents guide fiche pratique santé prévention " +
	"nutrition sommeil parents école dépistage calendrier allergies urgence conseils soins")

// document returns the body of the i-th seeded document: 45% LINK, 30%
// MARKDOWN, 15% HTML (both with 2 KiB of content), 10% PDF, each with 0 to
// 4 tags.
func (s *listingSeeder) document(i int) (string, map[string]any) {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	title := fmt.Sprintf("%s %s %s — n°%d", listingWords[r.IntN(len(listingWords))], listingWords[r.IntN(len(listingWords))],
		listingWords[r.IntN(len(listingWords))], i)
	tags := []string{}
	for _, k := range r.Perm(len(s.tags))[:r.IntN(5)] {
		tags = append(tags, s.tags[k])
	}
	body := map[string]any{"title": title, "tagsIds": tags}
	var typ string
	switch p := r.IntN(100); {
	case p < 45:
		typ = "LINK"
		body["url"] = fmt.Sprintf("https://www.example.org/ressources/%s/%d", listingWords[r.IntN(len(listingWords))], i)
	case p < 75:
		typ = "MARKDOWN"
		body["content"] = listingContent("# "+title+"\n\n", "Un paragraphe de texte sur la "+listingWords[r.IntN(len(listingWords))]+". ")
		body["sources"] = []string{"OMS", "Santé publique France"}
		body["imagesIds"] = []string{s.pngID}
	case p < 90:
		typ = "HTML"
		body["content"] = listingContent("<h1>"+title+"</h1>", "<p>Un paragraphe <em>HTML</em>.</p>")
	default:
		typ = "PDF"
		body["fileId"] = s.pdfID
	}
	if i == listingPlainDocument { // no tag, so no related document (CONTRACT.md §9)
		typ = "MARKDOWN"
		body = map[string]any{"title": title, "tagsIds": []string{}, "type": typ,
			"content": listingContent("# "+title+"\n\n", "Un paragraphe de texte. "), "sources": []string{"OMS"}, "imagesIds": []string{s.pngID}}
	}
	body["type"] = typ
	return typ, body
}

// listingPlainDocument is the seeded document whose detail has no related
// documents, measured beside one that has them (issue 14: related documents
// cost the detail read nothing measurable).
const listingPlainDocument = 1

// hasTags says whether a seeded body names tags.
func hasTags(body map[string]any) bool {
	t, _ := body["tagsIds"].([]string)
	return len(t) > 0
}

// listingContent is head then para repeated up to 2 KiB: the content the
// catalog's memory is measured with.
func listingContent(head, para string) string {
	var b strings.Builder
	b.WriteString(head)
	for b.Len()+len(para) <= listingContentSize {
		b.WriteString(para)
	}
	return b.String()
}

const listingContentSize = 2 << 10

// seedTo creates documents until the catalog holds n, with s.workers
// concurrent BO requests through the gateway, and waits until the public
// listing shows all n.
func (s *listingSeeder) seedTo(b *testing.B, n int) listingSeed {
	b.Helper()
	start, from := time.Now(), s.count
	first := from
	if s.count == 0 {
		// The first write creates the catalog's revision counter; concurrent
		// first writes race on it (E11000 on the meta collection, answered
		// 500 after the document was stored): one document alone first.
		typ, body := s.document(0)
		id, err := s.create(0, body)
		if err != nil {
			b.Fatalf("seeding: %v", err)
		}
		s.byType[typ]++
		if typ == "MARKDOWN" && hasTags(body) {
			s.detailID = id
		}
		first = 1
	}
	var next atomic.Int64
	next.Store(int64(first))
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < s.workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				typ, body := s.document(i)
				id, err := s.create(i, body)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					s.byType[typ]++
					if typ == "MARKDOWN" && hasTags(body) && s.detailID == "" {
						s.detailID = id
					}
					if i == listingPlainDocument {
						s.plainID = id
					}
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("seeding: %v", firstErr)
	}
	s.count = n
	took := time.Since(start)
	// A retried create may have been stored twice: the back-office listing
	// (revision-checked on every request) tells how many there are. The
	// catalog reads the documents just created first, which on the
	// development database can take longer than one request's budget (503).
	var all []json.RawMessage
	Eventually(b, 3*time.Minute, "the back-office listing answers", func() bool {
		r := s.st.BO("GET", "/bo/documents", nil)
		return r.Status == 200 && json.Unmarshal(r.Body, &all) == nil
	})
	if len(all) != n {
		b.Logf("the catalog holds %d documents, not %d (%d retried creates)", len(all), n, s.retries.Load())
	}
	var size int
	Eventually(b, 30*time.Second, fmt.Sprintf("the public listing shows %d documents", len(all)), func() bool {
		var list []json.RawMessage
		r := s.st.Req("GET", "/public/documents", nil)
		if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
			return false
		}
		size = len(r.Body)
		return len(list) == len(all)
	})
	byType := map[string]int{}
	for k, v := range s.byType {
		byType[k] = v
	}
	b.Logf("seeded %d documents (%d → %d) in %s with %d workers (%.0f docs/s); listing %d bytes",
		n-from, from, n, took.Round(time.Millisecond), s.workers, float64(n-from)/took.Seconds(), size)
	return listingSeed{added: n - from, took: took, workers: s.workers, byType: byType, listSize: size, stored: len(all), retries: s.retries.Load()}
}

// create stores the i-th document. A retry after a 5xx sends the same
// Idempotency-Key, so a create the catalog applied late is not stored
// twice; on a loaded machine the development database answers 503 now and
// then, so it tries for up to a minute.
func (s *listingSeeder) create(i int, body map[string]any) (string, error) {
	raw, _ := json.Marshal(body)
	key := fmt.Sprintf("bench-seed-%d-%d", s.started.UnixNano(), i)
	deadline := time.Now().Add(time.Minute)
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest("POST", s.st.AdminURL+"/bo/documents", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+Token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := s.client.Do(req)
		if err != nil {
			return "", err
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 201 {
			var d struct{ ID string }
			if err := json.Unmarshal(out, &d); err != nil {
				return "", err
			}
			return d.ID, nil
		}
		if (resp.StatusCode >= 500 || resp.StatusCode == 409) && time.Now().Before(deadline) {
			s.retries.Add(1)
			time.Sleep(min(time.Duration(attempt+1)*200*time.Millisecond, 2*time.Second))
			continue
		}
		return "", fmt.Errorf("POST /bo/documents: %d %s", resp.StatusCode, out)
	}
}

// ---- nginx ----

// nginxFile is what nginx serves at a path: body, and gz (when not nil) to
// clients that accept gzip (gzip_static, the precompressed file beside it).
type nginxFile struct{ body, gz []byte }

// startGoFloor serves files from memory with nothing but net/http (no
// router, no middleware, no cache lookup): what any Go server can do on
// this core, the floor of the gateway's cost against nginx. It answers
// If-None-Match with its own ETag, and gzip as nginx's gzip_static does.
func startGoFloor(b *testing.B, files map[string]nginxFile) (base string, etags map[string]string) {
	b.Helper()
	etags = map[string]string{}
	for path, f := range files {
		sum := sha256.Sum256(f.body)
		etags[path] = fmt.Sprintf(`"%x"`, sum[:8])
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Etag"] = []string{etags[r.URL.Path]}
		if f.gz != nil {
			h["Vary"] = []string{"Accept-Encoding"}
		}
		if r.Header.Get("If-None-Match") == etags[r.URL.Path] {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := f.body
		if f.gz != nil && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			h["Content-Encoding"] = []string{"gzip"}
			body = f.gz
		}
		h["Content-Length"] = []string{strconv.Itoa(len(body))}
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String(), etags
}

// startListingNginx serves files (URL path → content) from a temporary directory
// with an nginx of its own on a free loopback port, and returns its base URL.
func startListingNginx(b *testing.B, bin string, files map[string]nginxFile) string {
	b.Helper()
	// Not b.TempDir: nginx's workers may run as another user, who must be
	// able to read the files.
	dir, err := os.MkdirTemp("", "doclib-bench-nginx-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	addr, err := devserver.FreeAddr()
	if err != nil {
		b.Fatal(err)
	}
	var locs strings.Builder
	i := 0
	for path, file := range files {
		f := filepath.Join(dir, fmt.Sprintf("body-%d.json", i))
		i++
		if err := os.WriteFile(f, file.body, 0o644); err != nil {
			b.Fatal(err)
		}
		static := ""
		if file.gz != nil {
			if err := os.WriteFile(f+".gz", file.gz, 0o644); err != nil {
				b.Fatal(err)
			}
			static = " gzip_static on; gzip_vary on;"
		}
		fmt.Fprintf(&locs, "        location = %s { default_type application/json; alias %s;%s }\n", path, f, static)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // workers read the files as the owner
	}
	conf := fmt.Sprintf(`%sdaemon off;
master_process on;
worker_processes auto;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    server {
        listen %[3]s;
%[4]s    }
}
`, user, dir, addr, locs.String())
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatalf("start nginx: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	url := "http://" + addr
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-done:
			logs, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			b.Fatalf("nginx exited: %s\n%s", out.String(), logs)
		default:
		}
		for p := range files {
			if resp, err := http.Get(url + p); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return url
				}
			}
			break
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			b.Fatalf("nginx not answering on %s: %s\n%s", addr, out.String(), logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ---- wrk ----

type wrkRun struct {
	rps      float64
	p50, p99 time.Duration
	requests int64
	transfer string  // per second, as wrk prints it
	errors   string  // non-2xx/3xx or socket errors, empty if none
	load     float64 // the machine's 1-minute load average when it started
}

var (
	wrkRPS      = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)`)
	wrkTransfer = regexp.MustCompile(`(?m)^Transfer/sec:\s+(\S+)`)
	wrkLat      = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([0-9.]+)(us|ms|s|m)\s*$`)
	wrkReqs     = regexp.MustCompile(`(?m)^\s+(\d+) requests in `)
	wrkNon2xx   = regexp.MustCompile(`(?m)^\s+Non-2xx or 3xx responses: (\d+)`)
	wrkSocket   = regexp.MustCompile(`(?m)^\s+Socket errors: (.*)$`)
)

func parseWrkOutput(out string) (wrkRun, error) {
	var r wrkRun
	m := wrkRPS.FindStringSubmatch(out)
	if m == nil {
		return r, errors.New("no Requests/sec in wrk's output")
	}
	r.rps, _ = strconv.ParseFloat(m[1], 64)
	if m := wrkTransfer.FindStringSubmatch(out); m != nil {
		r.transfer = m[1]
	}
	if m := wrkReqs.FindStringSubmatch(out); m != nil {
		r.requests, _ = strconv.ParseInt(m[1], 10, 64)
	}
	for _, m := range wrkLat.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute}[m[3]]
		d := time.Duration(v * float64(unit))
		if m[1] == "50" {
			r.p50 = d
		} else {
			r.p99 = d
		}
	}
	if r.p50 == 0 || r.p99 == 0 {
		return r, errors.New("no 50%/99% latency in wrk's output (was --latency given?)")
	}
	var errs []string
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		errs = append(errs, m[1]+" non-2xx/3xx")
	}
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		errs = append(errs, "socket errors: "+m[1])
	}
	r.errors = strings.Join(errs, "; ")
	return r, nil
}

func runListingWrk(b *testing.B, bin string, cfg listingSettings, d time.Duration, t listingTarget) wrkRun {
	b.Helper()
	url := t.url
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	args := []string{"-t" + strconv.Itoa(cfg.threads), "-c" + strconv.Itoa(cfg.conns),
		"-d" + strconv.Itoa(int(d.Seconds())) + "s", "--latency"}
	for _, h := range t.headers {
		args = append(args, "-H", h)
	}
	args = append(args, url)
	if cfg.cpus.pinned {
		args = append([]string{"-c", cfg.cpus.load, bin}, args...)
		bin = cfg.cpus.taskset
	}
	load := loadAverage()
	cmd := exec.CommandContext(ctx, bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("wrk %s: %v\n%s", url, err, out)
	}
	r, err := parseWrkOutput(string(out))
	if err != nil {
		b.Fatalf("wrk %s: %v\n%s", url, err, out)
	}
	r.load = load
	return r
}

// loadAverage is the machine's 1-minute load average (/proc/loadavg, what
// uptime shows), 0 if unknown: the machine is shared, and a high load
// makes the figures noisy.
func loadAverage() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// ---- one size ----

type listingTarget struct {
	name, url string
	headers   []string // "Name: value", sent with every request
}

type listingSizeResult struct {
	n       int
	seed    listingSeed
	bytes   map[string]int // body bytes per route (listingRoutes)
	targets []listingTarget
	runs    map[string][]wrkRun // per target, one per round, in round order
}

// listingRoutes are the reads measured, each as nginx_<route>,
// gateway_<route> and, for list and the details, catalog_<route> (the catalog on
// its own port).
var listingRoutes = []string{"list", "list_gzip", "list_304", "detail", "detail_plain", "categories", "sync", "sync_empty"}

// listingRoutePaths say what each route is, for the report.
var listingRoutePaths = map[string]string{
	"list": "`/public/documents`", "list_gzip": "`/public/documents`, gzip",
	"list_304": "`/public/documents`, `If-None-Match` → 304", "detail": "`/public/documents/:id/detail`",
	"detail_plain": "`/public/documents/:id/detail`, no related documents",
	"categories":   "`/public/tags-categories`",
	"sync":         "`/public/sync`, first page", "sync_empty": "`/public/sync?cursor=`, nothing new (issue 14)",
}

func measureListingSize(b *testing.B, st *Stack, quietGateway, nginxBin, wrkBin string, cfg listingSettings, n int, detailID, plainID string) *listingSizeResult {
	b.Helper()
	detailPath := "/public/documents/" + detailID + "/detail"
	plainPath := "/public/documents/" + plainID + "/detail"
	plain := st.Req("GET", plainPath, nil, "Accept-Encoding", "identity")
	list := st.Req("GET", "/public/documents", nil, "Accept-Encoding", "identity")
	gz := st.Req("GET", "/public/documents", nil, "Accept-Encoding", "gzip")
	detail := st.Req("GET", detailPath, nil, "Accept-Encoding", "identity")
	cats := st.Req("GET", "/public/tags-categories", nil, "Accept-Encoding", "identity")
	var related, noRelated struct {
		RelatedDocuments []json.RawMessage `json:"relatedDocuments"`
	}
	detail.JSON(b, &related)
	plain.JSON(b, &noRelated)
	if len(related.RelatedDocuments) == 0 || len(noRelated.RelatedDocuments) != 0 {
		b.Fatalf("the detail measured has %d related documents (want some), the plain one %d (want none)",
			len(related.RelatedDocuments), len(noRelated.RelatedDocuments))
	}
	// Sync: the first page (up to 1,000 documents), and a sync that finds
	// nothing new, from the cursor of an up-to-date one.
	syncFirst := st.Req("GET", "/public/sync", nil, "Accept-Encoding", "identity")
	var page struct {
		Cursor  string `json:"cursor"`
		HasMore bool   `json:"hasMore"`
	}
	syncFirst.JSON(b, &page)
	for page.HasMore {
		st.Req("GET", "/public/sync?cursor="+url.QueryEscape(page.Cursor), nil, "Accept-Encoding", "identity").JSON(b, &page)
	}
	syncPath := "/public/sync?cursor=" + url.QueryEscape(page.Cursor)
	syncEmpty := st.Req("GET", syncPath, nil, "Accept-Encoding", "identity")
	if list.Status != 200 || gz.Status != 200 || gz.Header.Get("Content-Encoding") != "gzip" || detail.Status != 200 || cats.Status != 200 ||
		syncFirst.Status != 200 || syncEmpty.Status != 200 {
		b.Fatalf("listing %d, gzip listing %d (%q), detail %d, categories %d, sync %d, empty sync %d", list.Status, gz.Status,
			gz.Header.Get("Content-Encoding"), detail.Status, cats.Status, syncFirst.Status, syncEmpty.Status)
	}
	// nginx serves the two sync answers under paths of their own (it
	// would not tell them apart by the query).
	files := map[string]nginxFile{
		"/public/documents": {list.Body, gz.Body}, detailPath: {body: detail.Body}, plainPath: {body: plain.Body}, "/public/tags-categories": {body: cats.Body},
		"/sync/first": {body: syncFirst.Body}, "/sync/empty": {body: syncEmpty.Body},
	}
	ng := startListingNginx(b, nginxBin, files)
	floor, floorETags := startGoFloor(b, files)
	// The same bytes from nginx as from the gateway, and nginx's ETag for
	// its 304s.
	var nginxETag string
	for _, enc := range []string{"identity", "gzip"} {
		req, _ := http.NewRequest("GET", ng+"/public/documents", nil)
		req.Header.Set("Accept-Encoding", enc)
		r, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		got, _ := io.ReadAll(r.Body)
		r.Body.Close()
		want := list.Body
		if enc == "gzip" {
			want = gz.Body
		} else {
			nginxETag = r.Header.Get("ETag")
		}
		if !bytes.Equal(got, want) {
			b.Fatalf("nginx serves %d bytes (%s), the gateway %d", len(got), enc, len(want))
		}
	}
	cat := st.ServiceURL("catalog")
	gzipped := []string{"Accept-Encoding: gzip"}
	res := &listingSizeResult{n: n, runs: map[string][]wrkRun{}, bytes: map[string]int{
		"list": len(list.Body), "list_gzip": len(gz.Body), "list_304": 0, "detail": len(detail.Body), "detail_plain": len(plain.Body), "categories": len(cats.Body),
		"sync": len(syncFirst.Body), "sync_empty": len(syncEmpty.Body)},
		targets: []listingTarget{
			{"nginx_list", ng + "/public/documents", nil},
			{"gateway_list", st.URL + "/public/documents", nil},
			{"gateway_warn_list", quietGateway + "/public/documents", nil},
			{"catalog_list", cat + "/public/documents", nil},
			{"go_list", floor + "/public/documents", nil},
			{"nginx_list_gzip", ng + "/public/documents", gzipped},
			{"go_list_gzip", floor + "/public/documents", gzipped},
			{"gateway_list_gzip", st.URL + "/public/documents", gzipped},
			{"nginx_list_304", ng + "/public/documents", []string{"If-None-Match: " + nginxETag}},
			{"gateway_list_304", st.URL + "/public/documents", []string{"If-None-Match: " + list.Header.Get("ETag")}},
			{"gateway_warn_list_304", quietGateway + "/public/documents", []string{"If-None-Match: " + list.Header.Get("ETag")}},
			{"go_list_304", floor + "/public/documents", []string{"If-None-Match: " + floorETags["/public/documents"]}},
			{"nginx_detail", ng + detailPath, nil},
			{"gateway_detail", st.URL + detailPath, nil},
			{"gateway_warn_detail", quietGateway + detailPath, nil},
			{"catalog_detail", cat + detailPath, nil},
			{"go_detail", floor + detailPath, nil},
			{"nginx_detail_plain", ng + plainPath, nil},
			{"gateway_detail_plain", st.URL + plainPath, nil},
			{"catalog_detail_plain", cat + plainPath, nil},
			{"nginx_categories", ng + "/public/tags-categories", nil},
			{"gateway_categories", st.URL + "/public/tags-categories", nil},
			{"nginx_sync", ng + "/sync/first", nil},
			{"gateway_sync", st.URL + "/public/sync", nil},
			{"nginx_sync_empty", ng + "/sync/empty", nil},
			{"gateway_sync_empty", st.URL + syncPath, nil},
		}}
	for _, t := range res.targets { // every 304 target really gets 304s
		if !strings.HasSuffix(t.name, "_304") {
			continue
		}
		req, _ := http.NewRequest("GET", t.url, nil)
		req.Header.Set("If-None-Match", strings.TrimPrefix(t.headers[0], "If-None-Match: "))
		req.Header.Set("Accept-Encoding", "identity") // as wrk: no gzip
		r, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusNotModified {
			b.Fatalf("%s answers %d to its If-None-Match, not 304", t.name, r.StatusCode)
		}
	}
	runListingRounds(b, wrkBin, cfg, n, res.targets, res)
	if cfg.cpus.pinned {
		// The same reads again with every process on every CPU, wrk
		// included: what a machine without pinning sees (issue 22).
		shared := sharedTargets(res.targets)
		setAffinity(b, cfg.cpus, "0-"+strconv.Itoa(runtime.NumCPU()-1))
		unpinned := cfg
		unpinned.cpus.pinned = false
		runListingRounds(b, wrkBin, unpinned, n, shared, res)
		setAffinity(b, cfg.cpus, cfg.cpus.server)
		res.targets = append(res.targets, shared...)
	}
	return res
}

// runListingRounds warms every target up, then runs cfg.rounds rounds of
// them, every other one in the reverse order, into res.runs.
func runListingRounds(b *testing.B, wrkBin string, cfg listingSettings, n int, targets []listingTarget, res *listingSizeResult) {
	b.Helper()
	// Warm-up: connections, caches, the Go runtimes' heaps.
	for _, t := range targets {
		runListingWrk(b, wrkBin, cfg, time.Second, t)
	}
	for round := 0; round < cfg.rounds; round++ {
		// Every other round in the reverse order, so a drift of the machine
		// during a round does not always favour the same side.
		order := append([]listingTarget(nil), targets...)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, t := range order {
			r := runListingWrk(b, wrkBin, cfg, cfg.duration, t)
			if r.errors != "" {
				b.Errorf("%s (docs=%d, round %d): %s", t.name, n, round+1, r.errors)
			}
			b.Logf("docs=%d round %d %-22s %9.0f req/s  p50 %8s  p99 %8s  %s/s  load %.1f", n, round+1, t.name, r.rps, r.p50, r.p99, r.transfer, r.load)
			res.runs[t.name] = append(res.runs[t.name], r)
		}
	}
}

// defaultsRoutes are issue 22's routes: the gateway at its defaults
// against bare Go, pinned and shared.
var defaultsRoutes = []string{"detail", "list", "list_304"}

// sharedTargets are the nginx, gateway (both levels) and bare Go targets
// of defaultsRoutes, named shared_<name>, for the round with every CPU
// shared.
func sharedTargets(all []listingTarget) []listingTarget {
	var out []listingTarget
	for _, route := range defaultsRoutes {
		for _, who := range []string{"nginx", "gateway", "gateway_warn", "go"} {
			for _, t := range all {
				if t.name == who+"_"+route {
					t.name = "shared_" + t.name
					out = append(out, t)
				}
			}
		}
	}
	return out
}

// setAffinity moves this process and every process under it (the stack,
// its backing servers, nginx), every thread, onto cpus, then gives the Go
// runtimes the time to size GOMAXPROCS to them (they look about every
// second).
func setAffinity(b *testing.B, c benchCPUs, cpus string) {
	b.Helper()
	for _, pid := range descendants(os.Getpid()) {
		if out, err := exec.Command(c.taskset, "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
			b.Logf("taskset %d (it may have exited): %v %s", pid, err, out)
		}
	}
	time.Sleep(3 * time.Second)
}

// descendants is root and every process under it, from /proc.
func descendants(root int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// startQuietGateway starts a second gateway on st's services at
// LOG_LEVEL=warn, its output in logDir, and returns its public base URL.
func startQuietGateway(b *testing.B, st *Stack, logDir string) string {
	b.Helper()
	f, err := os.Create(filepath.Join(logDir, "gateway-warn.log"))
	testkit.Must(b, err, "log file")
	defer f.Close() // the child has its own copy
	_, base := serveOnFreePort(b, 60*time.Second, "/readyz", func(pub string) (*devserver.Process, error) {
		admin, err := devserver.FreeAddr()
		if err != nil {
			return nil, err
		}
		env := append(slices.Clone(st.env["gateway"]), "PUBLIC_ADDR="+pub, "ADMIN_ADDR="+admin, "LOG_LEVEL=warn")
		return devserver.Start("gateway-warn", filepath.Join(binDir, "gateway"), nil, env, f)
	})
	return base
}

// median is the median of each figure of a target's rounds.
func (r *listingSizeResult) median(name string) wrkRun {
	var rps, p50, p99 []float64
	for _, w := range r.runs[name] {
		rps = append(rps, w.rps)
		p50 = append(p50, float64(w.p50))
		p99 = append(p99, float64(w.p99))
	}
	return wrkRun{rps: median(rps), p50: time.Duration(median(p50)), p99: time.Duration(median(p99))}
}

// ratios are the medians over the rounds of the same-round ratios of a to
// base: requests/s (higher is better) and p99 (lower is better).
func (r *listingSizeResult) ratios(a, base string) (rps, p99 float64) {
	var rr, pr []float64
	for i := range r.runs[a] {
		if i >= len(r.runs[base]) {
			break
		}
		x, y := r.runs[a][i], r.runs[base][i]
		rr = append(rr, x.rps/y.rps)
		pr = append(pr, float64(x.p99)/float64(y.p99))
	}
	return median(rr), median(pr)
}

// ---- report ----

type listingReport struct {
	cfg               listingSettings
	started, finished time.Time
	database          string // what the stack's services store into
	nginxV, wrkV      string
	cpu, kernel       string
	sizes             []*listingSizeResult
	rss               rssResult
}

func (rep *listingReport) versions(nginxBin, wrkBin string) {
	out, _ := exec.Command(nginxBin, "-v").CombinedOutput()
	rep.nginxV = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "nginx version:"))
	out, _ = exec.Command(wrkBin, "-v").CombinedOutput()
	rep.wrkV = strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				rep.cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	out, _ = exec.Command("uname", "-sr").Output()
	rep.kernel = strings.TrimSpace(string(out))
}

func listingDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// listingCriteria are issue 12's targets, at 1,000 and 10,000 documents:
// the gateway's requests/s at least rps × nginx's, and (when p99 is not 0)
// its p99 at most p99 × nginx's, in the same run.
var listingCriteria = []struct {
	route    string
	rps, p99 float64
}{
	{"detail", 0.5, 2.0},
	{"list", 0.8, 1.5},
	{"list_gzip", 0.8, 1.5},
	{"categories", 0.5, 0},
	{"list_304", 0.5, 0},
	{"sync_empty", 0.5, 0}, // issue 14
}

var listingTargetSizes = []int{1000, 10000}

// listingRelayPoll is the catalog's outbox poll in this benchmark. Its
// default (1 s) costs MongoDB one index probe, but on the development
// database each poll reads the whole collection (402 ms at 10,000 small
// documents, bench/results/database.md; seconds with 2 KiB of content):
// on the one core the stack has, it would take most of that core from
// the reads measured. Nothing here writes while they are measured.
const listingRelayPoll = "OUTBOX_POLL_INTERVAL=1m"

// listingDatabase says what the stack stores into: the development
// database's backend (PostgreSQL where the machine has it, else SQLite),
// or the MongoDB of TEST_MONGODB_URI.
func listingDatabase(b *testing.B) string {
	if os.Getenv("TEST_MONGODB_URI") != "" {
		return "the MongoDB of TEST_MONGODB_URI"
	}
	d := testkit.DevDatabase(b)
	return fmt.Sprintf("FerretDB on %s, write gate %s", d.Backend, d.Gate)
}

func (rep *listingReport) markdown() string {
	var w strings.Builder
	c := rep.cfg
	fmt.Fprintf(&w, "# Public reads through the gateway vs nginx\n\n")
	fmt.Fprintf(&w, "Written by `BenchmarkListingVsNginx` (e2e/bench_listing_test.go); see bench/README.md. Do not edit by hand.\n\n")
	fmt.Fprintf(&w, "- Date: %s (run took %s)\n", rep.started.UTC().Format("2006-01-02 15:04 MST"), rep.finished.Sub(rep.started).Round(time.Second))
	fmt.Fprintf(&w, "- Machine: %d CPUs (nproc), %s, %s, GOMAXPROCS %d\n", runtime.NumCPU(), listingOrUnknown(rep.cpu), listingOrUnknown(rep.kernel), runtime.GOMAXPROCS(0))
	fmt.Fprintf(&w, "- Go %s; nginx %s (Debian package, `sendfile on`, `access_log off`, worker_processes auto); %s\n", strings.TrimPrefix(runtime.Version(), "go"), listingOrUnknown(rep.nginxV), listingOrUnknown(rep.wrkV))
	fmt.Fprintf(&w, "- Load: `wrk -t%d -c%d -d%s --latency`, %d rounds per target after a 1 s warm-up each; the targets run one after the other, every other round in reverse order. Figures are the median of the rounds; ratios are the median of the same-round ratios.\n",
		c.threads, c.conns, c.duration, c.rounds)
	fmt.Fprintf(&w, "- Stack: the e2e stack (%s, NATS, MinIO, the four services, the gateway) on loopback, all on this machine with wrk and nginx; the services run with their defaults (`LOG_LEVEL` info: its access log writes every error, write, back-office and slow request and samples successful public reads; no trace exporter; metrics on), their output appended to files as a container runtime keeps it; `gateway_warn` is a second gateway on the same services at `LOG_LEVEL=warn` (no access log line but for 5xx); the catalog's outbox relay polls every minute (`%s`: on the development database a poll reads the whole collection; nothing is written while reads are measured). **The gateway's /public rate limit is disabled** (`PUBLIC_RATE_LIMIT=0`); with its default (100 req/s per client IP) almost every request would be a 429.\n", rep.database, listingRelayPoll)
	if c := rep.cfg.cpus; c.pinned {
		fmt.Fprintf(&w, "- CPUs: wrk alone on CPU %s; everything else (the stack, its backing servers, nginx, this benchmark) on CPU %s, so nginx and the gateway each have the same core(s), and the Go services size GOMAXPROCS to them (`taskset`; `BENCH_PIN=0` shares every CPU). Then the `shared_` targets (issue 22's routes) run again with every process moved onto every CPU, wrk included.\n", c.load, c.server)
	} else {
		fmt.Fprintf(&w, "- CPUs: shared by wrk and every server (not pinned).\n")
	}
	fmt.Fprintf(&w, "- nginx serves the very bytes the gateway answered (the listing, also gzipped with `gzip_static`; one MARKDOWN document's detail; the tag categories) as static files, and answers `If-None-Match` with its own ETag; `catalog` is the catalog service hit directly on its own port, without the gateway; `go` is bare Go `net/http` in the benchmark's process serving the same bytes from memory (no router, no middleware; its own ETag; gzip as `gzip_static`), on the same core. wrk sends `Accept-Encoding: gzip` on the gzip targets and `If-None-Match` on the 304 ones.\n\n")

	fmt.Fprintf(&w, "## Figures\n\n")
	fmt.Fprintf(&w, "| docs | route | target | body | req/s | p50 | p99 | req/s ÷ nginx | p99 ÷ nginx |\n")
	fmt.Fprintf(&w, "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range rep.sizes {
		for _, route := range listingRoutes {
			for _, who := range []string{"nginx", "gateway", "gateway_warn", "catalog", "go"} {
				name := who + "_" + route
				if len(s.runs[name]) == 0 {
					continue
				}
				m := s.median(name)
				rr, pr := "—", "—"
				if who != "nginx" {
					a, b := s.ratios(name, "nginx_"+route)
					rr, pr = fmt.Sprintf("%.2f", a), fmt.Sprintf("%.2f", b)
				}
				fmt.Fprintf(&w, "| %d | %s | %s | %s | %.0f | %s | %s | %s | %s |\n", s.n, listingRoutePaths[route], who,
					listingBytes(s.bytes[route]), m.rps, listingDur(m.p50), listingDur(m.p99), rr, pr)
			}
		}
	}

	fmt.Fprintf(&w, "\n## Targets\n\n")
	fmt.Fprintf(&w, "Through the gateway, against nginx in the same run, at %d connections (issue 12).\n\n", c.conns)
	fmt.Fprintf(&w, "The last column is bare Go `net/http` serving the same bytes from memory (no router, no middleware) against nginx in the same rounds: the floor of any Go server on this core.\n\n")
	fmt.Fprintf(&w, "| docs | route | req/s ÷ nginx | target | p99 ÷ nginx | target | result | bare Go req/s ÷ nginx |\n| ---: | --- | ---: | ---: | ---: | ---: | --- | ---: |\n")
	for _, n := range listingTargetSizes {
		var s *listingSizeResult
		for _, x := range rep.sizes {
			if x.n == n {
				s = x
			}
		}
		if s == nil {
			fmt.Fprintf(&w, "| %d | not measured in this run | | | | | | |\n", n)
			continue
		}
		for _, cr := range listingCriteria {
			rr, pr := s.ratios("gateway_"+cr.route, "nginx_"+cr.route)
			ok := rr >= cr.rps && (cr.p99 == 0 || pr <= cr.p99)
			p99Target := "—"
			if cr.p99 > 0 {
				p99Target = fmt.Sprintf("≤ %.2f", cr.p99)
			}
			verdict := "**FAIL**"
			if ok {
				verdict = "**PASS**"
			}
			floor := "—"
			if len(s.runs["go_"+cr.route]) > 0 {
				fr, _ := s.ratios("go_"+cr.route, "nginx_"+cr.route)
				floor = fmt.Sprintf("%.2f", fr)
			}
			fmt.Fprintf(&w, "| %d | %s | %.2f | ≥ %.2f | %.2f | %s | %s | %s |\n", n, listingRoutePaths[cr.route], rr, cr.rps, pr, p99Target, verdict, floor)
		}
	}
	if c.conns != 64 {
		fmt.Fprintf(&w, "\n(Run with %d connections, not 64: not the target's conditions.)\n", c.conns)
	}

	rep.defaultsMarkdown(&w)

	fmt.Fprintf(&w, "\n## Related documents\n\n")
	fmt.Fprintf(&w, "Issue 14: the detail with `relatedDocuments` (a MARKDOWN document with tags; its related documents are ranked when the catalog renders it) against the detail of a MARKDOWN document without tags, whose `relatedDocuments` is empty, in the same rounds; target: within 10 %% (req/s ratio ≥ 0.90).\n\n")
	fmt.Fprintf(&w, "| docs | through | body with / without | req/s with ÷ without | target | p99 with ÷ without | result |\n| ---: | --- | --- | ---: | ---: | ---: | --- |\n")
	for _, s := range rep.sizes {
		for _, who := range []string{"gateway", "catalog"} {
			rr, pr := s.ratios(who+"_detail", who+"_detail_plain")
			verdict := "**FAIL**"
			if rr >= 0.9 {
				verdict = "**PASS**"
			}
			fmt.Fprintf(&w, "| %d | %s | %s / %s | %.2f | ≥ 0.90 | %.2f | %s |\n", s.n, who, listingBytes(s.bytes["detail"]), listingBytes(s.bytes["detail_plain"]), rr, pr, verdict)
		}
	}
	fmt.Fprintf(&w, "\n## Catalog memory\n\n")
	fmt.Fprintf(&w, "%s\n", rep.rss.markdown())
	fmt.Fprintf(&w, "\n## Seeding\n\n")
	fmt.Fprintf(&w, "Documents created through `POST /bo/documents` on the gateway, %d concurrent requests; 45%% LINK, 30%% MARKDOWN (with an image), 15%% HTML (both with 2 KiB of content), 10%% PDF (one shared file), 0 to 4 of 20 tags each. Each size adds to the previous one.\n\n", c.seedWorkers)
	fmt.Fprintf(&w, "| docs | added | took | docs/s | LINK | MARKDOWN | HTML | PDF | listing body | stored | retried creates |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, s := range rep.sizes {
		fmt.Fprintf(&w, "| %d | %d | %s | %.0f | %d | %d | %d | %d | %s | %d | %d |\n", s.n, s.seed.added, s.seed.took.Round(100*time.Millisecond),
			float64(s.seed.added)/s.seed.took.Seconds(), s.seed.byType["LINK"], s.seed.byType["MARKDOWN"], s.seed.byType["HTML"], s.seed.byType["PDF"], listingBytes(s.seed.listSize),
			s.seed.stored, s.seed.retries)
	}

	fmt.Fprintf(&w, "\n## Every round\n\n")
	fmt.Fprintf(&w, "`shared_` targets ran with every process on every CPU, wrk included; load is the machine's 1-minute load average (`uptime`) as the run started.\n\n")
	fmt.Fprintf(&w, "| docs | target | round | req/s | p50 | p99 | transfer/s | load 1m | errors |\n| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
	for _, s := range rep.sizes {
		for _, t := range s.targets {
			for i, r := range s.runs[t.name] {
				fmt.Fprintf(&w, "| %d | %s | %d | %.0f | %s | %s | %s | %.1f | %s |\n", s.n, t.name, i+1, r.rps, listingDur(r.p50), listingDur(r.p99), r.transfer, r.load, listingOrNone(r.errors))
			}
		}
	}
	return w.String()
}

// defaultsTarget is issue 22's: the gateway at its defaults serves at
// least this share of bare Go net/http's requests/s, in the same rounds.
const defaultsTarget = 0.8

// defaultsMarkdown writes issue 22's rows: the gateway with its defaults
// (and at warn) against bare Go net/http in the same rounds, with wrk
// pinned to its own CPU and with every CPU shared.
func (rep *listingReport) defaultsMarkdown(w io.Writer) {
	fmt.Fprintf(w, "\n## The default configuration against bare Go (issue 22)\n\n")
	fmt.Fprintf(w, "The gateway as users run it (`LOG_LEVEL` info, no trace exporter, metrics on) and the same gateway at `LOG_LEVEL=warn`, against bare Go `net/http` serving the same bytes, in the same rounds, at %d connections. Target: defaults ≥ %.2f× bare Go req/s. \"pinned\": wrk alone on CPU %s, everything else on the other(s); \"shared\": every process on every CPU. Load: the median over the rounds of the machine's 1-minute load average (wrk's two threads and the server under test alone make about 3; much more means other work ran beside this benchmark, and the figures are noisy).\n\n",
		rep.cfg.conns, defaultsTarget, rep.cfg.cpus.load)
	fmt.Fprintf(w, "| docs | CPUs | route | defaults req/s | warn req/s | bare Go req/s | defaults ÷ Go | target | result | warn ÷ Go | defaults ÷ nginx | load 1m |\n")
	fmt.Fprintf(w, "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: |\n")
	for _, s := range rep.sizes {
		for _, mode := range []string{"", "shared_"} {
			label := "pinned"
			if mode != "" || !rep.cfg.cpus.pinned {
				label = "shared"
			}
			for _, route := range defaultsRoutes {
				gw, warn, gof, ng := mode+"gateway_"+route, mode+"gateway_warn_"+route, mode+"go_"+route, mode+"nginx_"+route
				if len(s.runs[gw]) == 0 || len(s.runs[gof]) == 0 {
					continue
				}
				rr, _ := s.ratios(gw, gof)
				wr, _ := s.ratios(warn, gof)
				nr, _ := s.ratios(gw, ng)
				verdict := "**FAIL**"
				if rr >= defaultsTarget {
					verdict = "**PASS**"
				}
				var loads []float64
				for _, r := range s.runs[gw] {
					loads = append(loads, r.load)
				}
				fmt.Fprintf(w, "| %d | %s | %s | %.0f | %.0f | %.0f | %.2f | ≥ %.2f | %s | %.2f | %.2f | %.1f |\n", s.n, label, listingRoutePaths[route],
					s.median(gw).rps, s.median(warn).rps, s.median(gof).rps, rr, defaultsTarget, verdict, wr, nr, median(loads))
			}
		}
	}
	if rep.cfg.conns != 64 {
		fmt.Fprintf(w, "\n(Run with %d connections, not 64: not the target's conditions.)\n", rep.cfg.conns)
	}
}

func listingBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func listingOrUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func listingOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// ---- catalog memory ----

// rssResult is the catalog's resident memory, sampled every second while
// wrk loads it (its own port: the listing and a detail at once).
type rssResult struct {
	docs     int
	duration time.Duration
	samples  []int64 // bytes
	load     string
}

// measureCatalogRSS samples the catalog's RSS over cfg.rssDuration at the
// largest size measured.
func measureCatalogRSS(b *testing.B, st *Stack, wrkBin string, cfg listingSettings, detailID string) rssResult {
	b.Helper()
	res := rssResult{docs: cfg.sizes[len(cfg.sizes)-1], duration: cfg.rssDuration}
	pid := st.Pid("catalog")
	cat := st.ServiceURL("catalog")
	targets := []listingTarget{
		{"catalog_list", cat + "/public/documents", nil},
		{"catalog_detail", cat + "/public/documents/" + detailID + "/detail", nil},
	}
	half := cfg
	half.conns = max(1, cfg.conns/2)
	half.threads = max(1, cfg.threads/2)
	res.load = fmt.Sprintf("two `wrk -t%d -c%d` at once on the catalog's own port, the listing and a detail", half.threads, half.conns)
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Go(func() { runListingWrk(b, wrkBin, half, cfg.rssDuration, t) })
	}
	stop := time.After(cfg.rssDuration)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	res.samples = append(res.samples, readRSS(b, pid))
sample:
	for {
		select {
		case <-stop:
			break sample
		case <-tick.C:
			res.samples = append(res.samples, readRSS(b, pid))
		}
	}
	wg.Wait()
	res.samples = append(res.samples, readRSS(b, pid))
	return res
}

// readRSS reads VmRSS from /proc/<pid>/status, in bytes.
func readRSS(b *testing.B, pid int) int64 {
	b.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("catalog RSS: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("catalog RSS %q: %v", line, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

func (r rssResult) markdown() string {
	if len(r.samples) == 0 {
		return "Not measured in this run."
	}
	lo, hi := r.samples[0], r.samples[0]
	for _, v := range r.samples {
		lo, hi = min(lo, v), max(hi, v)
	}
	first, last := r.samples[0], r.samples[len(r.samples)-1]
	mib := func(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
	return fmt.Sprintf("The catalog's RSS at %d documents, sampled every second for %s under load (%s):\n\n"+
		"| first | last | min | max | last − first | samples |\n| ---: | ---: | ---: | ---: | ---: | ---: |\n"+
		"| %s | %s | %s | %s | %s | %d |\n",
		r.docs, r.duration, r.load, mib(first), mib(last), mib(lo), mib(hi), mib(last-first), len(r.samples))
}
