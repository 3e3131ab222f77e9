package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/testkit"
)

// readSideBefore is main just before issue 23's read side (one follower per
// replica) was merged: the catalog this benchmark compares with.
const readSideBefore = "b519dc2"

// BenchmarkReadSide compares the catalog's read side before issue 23 with
// the current one, in the same run, on the same database: two extra catalog
// replicas, one of each binary, beside the stack's own catalog, which takes
// every write. Figures: catch-up after writes elsewhere, start-up, public
// detail and listing on each replica's own port. bench/README.md says how.
func BenchmarkReadSide(b *testing.B) {
	_, wrkBin := listingTools(b)
	cfg := loadListingSettings(b)
	n := cfg.sizes[len(cfg.sizes)-1]
	cfg.cpus = splitCPUs(b)
	rev := readSideBefore
	if v := os.Getenv("BENCH_READSIDE_BEFORE"); v != "" {
		rev = v
	}
	before := buildCatalogAt(b, rev)
	after := filepath.Join(buildServices(b), "catalog")
	st := NewStackLoggingTo(b, map[string][]string{"gateway": {"PUBLIC_RATE_LIMIT=0"}, "catalog": {listingRelayPoll}}, b.TempDir())
	seeder := newListingSeeder(b, st, cfg.seedWorkers)
	rep := readSideReport{rev: rev, docs: n, started: time.Now()}

	// Catch-up: both replicas frozen (SIGSTOP) while n documents are written
	// through the stack's catalog, then woken one at a time.
	reps := map[string]*devserver.Process{}
	urls := map[string]string{}
	for _, name := range []string{"before", "after"} {
		reps[name], urls[name] = st.catalogReplica(name, map[string]string{"before": before, "after": after}[name])
		readSideCount(b, urls[name]) // each has read the empty library
		testkit.Must(b, syscall.Kill(reps[name].Pid(), syscall.SIGSTOP), "freeze "+name)
	}
	rep.seed = seeder.seedTo(b, n)
	for _, name := range []string{"after", "before"} {
		testkit.Must(b, syscall.Kill(reps[name].Pid(), syscall.SIGCONT), "wake "+name)
		rep.catchUp = append(rep.catchUp, readSideTiming{name, readSideUntil(b, urls[name], rep.seed.stored)})
	}

	// Read speed on each replica's own port, alternating rounds.
	res := &listingSizeResult{n: n, runs: map[string][]wrkRun{}}
	detail := "/public/documents/" + seeder.detailID + "/detail"
	var targets []listingTarget
	for _, name := range []string{"before", "after"} {
		targets = append(targets, listingTarget{name + "_detail", urls[name] + detail, nil},
			listingTarget{name + "_list", urls[name] + "/public/documents", nil})
	}
	runListingRounds(b, wrkBin, cfg, n, targets, res)
	rep.reads = res
	for _, name := range []string{"before", "after"} {
		reps[name].Stop()
	}

	// Start-up at n documents: ready, then the whole listing served.
	for round := 0; round < cfg.rounds; round++ {
		for _, name := range readSideOrder(round) {
			bin := map[string]string{"before": before, "after": after}[name]
			start := time.Now()
			p, url := st.catalogReplica(name, bin)
			ready := time.Since(start)
			served := readSideUntil(b, url, rep.seed.stored) + ready
			p.Stop()
			rep.startUp = append(rep.startUp, readSideStart{name, round + 1, ready, served})
		}
	}
	rep.finished = time.Now()
	out := filepath.Join("..", "bench", "results", "readside.md")
	if v := os.Getenv("BENCH_OUT"); v != "" {
		out = v
	}
	md := rep.markdown()
	testkit.Must(b, os.WriteFile(out, []byte(md), 0o644), "write "+out)
	b.Logf("figures written to %s\n%s", out, md)
}

func readSideOrder(round int) []string {
	if round%2 == 1 {
		return []string{"after", "before"}
	}
	return []string{"before", "after"}
}

// buildCatalogAt builds the catalog of git revision rev (a worktree of this
// repository, removed after).
func buildCatalogAt(b *testing.B, rev string) string {
	b.Helper()
	root, err := filepath.Abs("..")
	testkit.Must(b, err, "repository root")
	dir := filepath.Join(b.TempDir(), "src")
	run := func(dir string, args ...string) {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run(root, "git", "worktree", "add", "--detach", dir, rev)
	b.Cleanup(func() { run(root, "git", "worktree", "remove", "--force", dir) })
	bin := filepath.Join(b.TempDir(), "catalog-"+rev)
	run(dir, "go", "build", "-o", bin, "./services/catalog/cmd/catalog")
	return bin
}

// catalogReplica starts another catalog process from bin on the stack's
// database and waits until it is ready; it stops with the benchmark.
func (st *Stack) catalogReplica(name, bin string) (*devserver.Process, string) {
	st.t.Helper()
	return serveOnFreePort(st.t, 5*time.Minute, "/readyz", func(addr string) (*devserver.Process, error) {
		env := append(append([]string(nil), st.env["catalog"]...), "HTTP_ADDR="+addr)
		return devserver.Start("catalog-"+name, bin, nil, env, st.output("catalog-"+name))
	})
}

// readSideCount is how many documents the public listing at base holds,
// or -1 when it does not answer 200.
func readSideCount(b *testing.B, base string) int {
	b.Helper()
	var st Stack
	st.t = b
	r := st.ReqAt(base, "GET", "/public/documents", nil, "Accept-Encoding", "identity")
	var list []json.RawMessage
	if r.Status != 200 || json.Unmarshal(r.Body, &list) != nil {
		return -1
	}
	return len(list)
}

// readSideUntil asks the listing at base every 10 ms until it holds n
// documents and returns how long that took.
func readSideUntil(b *testing.B, base string, n int) time.Duration {
	b.Helper()
	start := time.Now()
	for readSideCount(b, base) != n {
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%s: the listing does not hold %d documents after 10 minutes", base, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

type readSideTiming struct {
	name string
	took time.Duration
}

type readSideStart struct {
	name          string
	round         int
	ready, served time.Duration
}

type readSideReport struct {
	rev               string
	docs              int
	started, finished time.Time
	seed              listingSeed
	catchUp           []readSideTiming
	startUp           []readSideStart
	reads             *listingSizeResult
}

func (rep readSideReport) markdown() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# The catalog's read side, before and after issue 23\n\n"+
		"Written by `BenchmarkReadSide` (e2e/bench_readside_test.go); see bench/README.md. Do not edit by hand.\n\n"+
		"- Date: %s UTC (run took %s); 1-minute load at the end: %.1f\n"+
		"- `before`: the catalog built from %s (main before the follower); `after`: this commit. Both are extra replicas "+
		"on the stack's database; the stack's own catalog takes every write.\n"+
		"- Documents: %d, seeded through the gateway in %s (%.0f docs/s).\n\n",
		rep.started.UTC().Format("2006-01-02 15:04"), listingDur(rep.finished.Sub(rep.started)), loadAverage(), rep.rev,
		rep.seed.stored, listingDur(rep.seed.took), float64(rep.seed.added)/rep.seed.took.Seconds())
	rep.targets(&sb)
	sb.WriteString("\n## Start-up at " + strconv.Itoa(rep.docs) + " documents\n\nFrom exec to `/readyz` 200, and to a public listing holding every document.\n\n" +
		"| replica | round | ready | listing served |\n| --- | ---: | ---: | ---: |\n")
	for _, s := range rep.startUp {
		fmt.Fprintf(&sb, "| %s | %d | %s | %s |\n", s.name, s.round, listingDur(s.ready), listingDur(s.served))
	}
	sb.WriteString("\n## Reads on each replica's own port\n\n| target | req/s | p50 | p99 |\n| --- | ---: | ---: | ---: |\n")
	for _, t := range []string{"before_detail", "after_detail", "before_list", "after_list"} {
		m := rep.reads.median(t)
		fmt.Fprintf(&sb, "| %s | %.0f | %s | %s |\n", t, m.rps, m.p50.Round(100*time.Microsecond), m.p99.Round(100*time.Microsecond))
	}
	return sb.String()
}

// targets writes issue 23's rows: after against before, same run.
func (rep readSideReport) targets(sb *strings.Builder) {
	sb.WriteString("## Targets\n\n| figure | before | after | after ÷ before | target | result |\n| --- | ---: | ---: | ---: | ---: | --- |\n")
	row := func(what string, bv, av float64, unit string, ratio float64, target string, ok bool) {
		fmt.Fprintf(sb, "| %s | %.1f %s | %.1f %s | %.2f | %s | %s |\n", what, bv, unit, av, unit, ratio, target, passFail(ok))
	}
	for _, route := range []string{"detail", "list"} {
		rr, _ := rep.reads.ratios("after_"+route, "before_"+route)
		row("public "+route+" req/s", rep.reads.median("before_"+route).rps, rep.reads.median("after_"+route).rps, "req/s", rr, "≥ 0.95", rr >= 0.95)
	}
	times := map[string]time.Duration{}
	for _, c := range rep.catchUp {
		times[c.name] = c.took
	}
	cu := float64(times["after"]) / float64(times["before"])
	row(fmt.Sprintf("catch-up after %d writes elsewhere", rep.seed.added), times["before"].Seconds()*1000, times["after"].Seconds()*1000, "ms", cu, "≤ 1.05", cu <= 1.05)
	var sb4, sa []float64
	for _, s := range rep.startUp {
		if s.name == "before" {
			sb4 = append(sb4, float64(s.served))
		} else {
			sa = append(sa, float64(s.served))
		}
	}
	su := median(sa) / median(sb4)
	row(fmt.Sprintf("start-up at %d documents (median, to the listing served)", rep.docs), median(sb4)/1e6, median(sa)/1e6, "ms", su, "≤ 1.05", su <= 1.05)
	sb.WriteString("\nCatch-up: both replicas were frozen (SIGSTOP) while the documents were written, then woken one at a time, `after` first; " +
		"the time is from its SIGCONT to its public listing holding every document (asked every 10 ms). The catalog's RSS at 10,000 documents over 60 s is in listing.md (Catalog memory).\n")
}
