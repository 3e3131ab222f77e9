package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
)

// The tag deletion benchmark's parameters.
const (
	delTags        = 100                    // tags (and documents) per phase
	delSeqTarget   = 100 * time.Millisecond // p99 target of issue 11, one deletion after the other
	delBurstTarget = 200 * time.Millisecond // p99 target of issue 11, 100 deletions at once
	delPollSleep   = 2 * time.Millisecond   // between two polls of one document
	delPollers     = 8                      // concurrent pollers in the burst phase
	delMaxWait     = 30 * time.Second       // a tag still on its document after this fails the run
	delPerDocTags  = 3                      // tags per document: its own and two shared
)

// delSample is one deletion: when its DELETE answered, when a detail
// without the tag was first seen, and (from the service logs) when the
// taxonomy published the event and the catalog applied it.
type delSample struct {
	tag, doc           string
	deleted, seen      time.Time
	published, applied time.Time
	polls              int
	lastPoll           time.Time       // when the previous poll of the document answered
	gaps               []time.Duration // between two answered polls of the document
}

func (s delSample) latency() time.Duration { return s.seen.Sub(s.deleted) }

// delClient talks to the gateway with enough idle connections for a burst.
var delClient = &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}

// delReq sends a request and reads the body; it is safe for concurrent use
// (unlike st.Req, whose failures call t.Fatal).
func delReq(method, url string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	resp, err := delClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
}

// hasTag reports whether the public detail of doc still carries tag.
func hasTag(st *Stack, doc, tag string) (bool, error) {
	status, raw, err := delReq("GET", st.URL+"/public/documents/"+doc+"/detail")
	if err != nil {
		return false, err
	}
	if status != http.StatusOK {
		return false, fmt.Errorf("detail %s: %d %s", doc, status, raw)
	}
	var d struct {
		TagsIDs []string `json:"tagsIds"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return false, err
	}
	return slices.Contains(d.TagsIDs, tag), nil
}

// seedDeletion creates a category, delTags tags and delTags LINK documents;
// document i carries tag i, i+1 and i+7 (mod delTags), so every tag is on
// three documents. It returns the samples, tag i on document i.
func seedDeletion(st *Stack, prefix string) []*delSample {
	st.t.Helper()
	cat := prefix + "cat"
	st.Must("POST", "/bo/tags-categories", fmt.Sprintf(`{"id":%q,"name":%q}`, cat, cat), 201)
	tag := func(i int) string { return fmt.Sprintf("%s%03d", prefix, i%delTags) }
	for i := range delTags {
		st.Must("POST", "/bo/tags", fmt.Sprintf(`{"id":%q,"name":%q,"categoryId":%q}`, tag(i), tag(i), cat), 201)
	}
	out := make([]*delSample, delTags)
	for i := range delTags {
		var d docJSON
		st.Must("POST", "/bo/documents", map[string]any{"type": "LINK", "title": "Doc " + tag(i), "url": "https://example.org/" + tag(i),
			"tagsIds": []string{tag(i), tag(i + 1), tag(i + 7)}}, 201).JSON(st.t, &d)
		out[i] = &delSample{tag: tag(i), doc: d.ID}
	}
	return out
}

// deleteTag sends DELETE /bo/tags/:id and records when it answered.
func deleteTag(st *Stack, s *delSample) error {
	status, raw, err := delReq("DELETE", st.AdminURL+"/bo/tags/"+s.tag)
	s.deleted = time.Now()
	if err != nil {
		return err
	}
	if status != http.StatusNoContent {
		return fmt.Errorf("DELETE tag %s: %d %s", s.tag, status, raw)
	}
	return nil
}

// poll asks once whether s's tag left its document; it records the first
// answer without it.
func poll(st *Stack, s *delSample) (bool, error) {
	has, err := hasTag(st, s.doc, s.tag)
	now := time.Now()
	if err != nil {
		return false, err
	}
	s.polls++
	if !s.lastPoll.IsZero() {
		s.gaps = append(s.gaps, now.Sub(s.lastPoll))
	}
	s.lastPoll = now
	if !has {
		s.seen = now
		return true, nil
	}
	if now.Sub(s.deleted) > delMaxWait {
		return false, fmt.Errorf("tag %s still on document %s %s after its DELETE", s.tag, s.doc, delMaxWait)
	}
	return false, nil
}

// sequentialDeletions deletes the tags one after the other, polling the
// document of each until the tag has left it.
func sequentialDeletions(b *testing.B, st *Stack, samples []*delSample) {
	for _, s := range samples {
		testkit.Must(b, deleteTag(st, s), "delete")
		for {
			done, err := poll(st, s)
			testkit.Must(b, err, "poll")
			if done {
				break
			}
			time.Sleep(delPollSleep)
		}
	}
}

// burstDeletions sends all DELETEs at once (one goroutine each, released
// together); delPollers goroutines poll the documents whose DELETE has
// answered, round robin, until every tag has left its document.
func burstDeletions(b *testing.B, st *Stack, samples []*delSample) (released time.Time) {
	var (
		mu      sync.Mutex
		pending []*delSample // DELETE answered, tag not yet seen gone
		left    = len(samples)
		errs    []error
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for _, s := range samples {
		wg.Go(func() {
			<-start
			err := deleteTag(st, s)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				left--
				return
			}
			pending = append(pending, s)
		})
	}
	// take hands out the pending sample polled longest ago.
	take := func() (*delSample, bool) {
		mu.Lock()
		defer mu.Unlock()
		if left == 0 || len(errs) > 0 {
			return nil, false
		}
		if len(pending) == 0 {
			return nil, true
		}
		s := pending[0]
		pending = pending[1:]
		return s, true
	}
	for range delPollers {
		wg.Go(func() {
			for {
				s, more := take()
				if !more {
					return
				}
				if s == nil {
					time.Sleep(delPollSleep)
					continue
				}
				done, err := poll(st, s)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err)
				case done:
					left--
				default:
					pending = append(pending, s)
				}
				mu.Unlock()
			}
		})
	}
	released = time.Now()
	close(start)
	wg.Wait()
	for _, err := range errs {
		b.Error(err)
	}
	if len(errs) > 0 {
		b.FailNow()
	}
	return released
}

// eventTimes reads, from the stack's logs, when the taxonomy published each
// event and when the catalog applied it, and fills them in by tag.
func eventTimes(st *Stack, samples []*delSample) {
	byTag := map[string]*delSample{}
	for _, s := range samples {
		byTag[s.tag] = s
	}
	published := map[string]time.Time{}
	applied := map[string]time.Time{} // by event id
	tagOf := map[string]string{}      // event id -> tag
	sc := bufio.NewScanner(strings.NewReader(st.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		svc, line, ok := strings.Cut(sc.Text(), " | ")
		if !ok || (svc != "taxonomy" && svc != "catalog") {
			continue
		}
		var r struct {
			Time     time.Time `json:"time"`
			Msg      string    `json:"msg"`
			EventID  string    `json:"eventId"`
			EventID2 string    `json:"event_id"`
			TagID    string    `json:"tag_id"`
			Subject  string    `json:"subject"`
		}
		if json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		switch {
		case svc == "taxonomy" && r.Msg == "event published":
			published[r.EventID] = r.Time
		case svc == "catalog" && r.Msg == "event applied: tag removed from documents":
			applied[r.EventID2] = r.Time
			tagOf[r.EventID2] = r.TagID
		}
	}
	for id, tag := range tagOf {
		if s := byTag[tag]; s != nil {
			s.applied = applied[id]
			s.published = published[id]
		}
	}
}

// pct is the nearest-rank percentile p (0..100) of ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

type delStats struct {
	name   string
	target time.Duration // of its p99
	// latency: DELETE answered → seen gone; relay: → published; consume:
	// published → the catalog's handler returned; visible: handler
	// returned → seen gone; published: published → seen gone.
	latency, relay, consume, visible, published, gaps []time.Duration
	polls                                             int
	// Spacing of consecutive publications and applications (sorted by
	// time): while a stage has a backlog, its cost per event.
	pubGap, applyGap []time.Duration
	// first and last DELETE answer, after the release (burst).
	firstDel, lastDel time.Duration
}

func statsOf(name string, target time.Duration, samples []*delSample, released time.Time) delStats {
	st := delStats{name: name, target: target}
	var pubs, apps []time.Time
	for _, s := range samples {
		if !released.IsZero() {
			d := s.deleted.Sub(released)
			if st.firstDel == 0 || d < st.firstDel {
				st.firstDel = d
			}
			st.lastDel = max(st.lastDel, d)
		}
		if !s.published.IsZero() {
			pubs = append(pubs, s.published)
		}
		if !s.applied.IsZero() {
			apps = append(apps, s.applied)
		}
		st.latency = append(st.latency, s.latency())
		st.polls += s.polls
		st.gaps = append(st.gaps, s.gaps...)
		if !s.published.IsZero() && !s.applied.IsZero() {
			st.relay = append(st.relay, s.published.Sub(s.deleted))
			st.consume = append(st.consume, s.applied.Sub(s.published))
			st.visible = append(st.visible, s.seen.Sub(s.applied))
			st.published = append(st.published, s.seen.Sub(s.published))
		}
	}
	st.pubGap, st.applyGap = spacing(pubs), spacing(apps)
	return st
}

// spacing sorts ts and returns the gaps between consecutive times.
func spacing(ts []time.Time) []time.Duration {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	var out []time.Duration
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i].Sub(ts[i-1]))
	}
	return out
}

// span is the time from the first publication to the last application.
func span(samples []*delSample) time.Duration {
	var first, last time.Time
	for _, s := range samples {
		if !s.published.IsZero() && (first.IsZero() || s.published.Before(first)) {
			first = s.published
		}
		if s.applied.After(last) {
			last = s.applied
		}
	}
	if first.IsZero() || last.IsZero() {
		return 0
	}
	return last.Sub(first)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// padSeeds reads BENCH_DELETION_PADDING: how many more seeds (a category,
// delTags tags, delTags documents each) to create and leave alone, to see
// how the latencies grow with the size of the collections.
func padSeeds(tb testing.TB) int {
	v := os.Getenv("BENCH_DELETION_PADDING")
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		tb.Fatalf("BENCH_DELETION_PADDING=%q: want a number of seeds, 0 or more", v)
	}
	return n
}

// BenchmarkTagDeletionLatency measures the time from DELETE /bo/tags/:id
// answering to the tag being gone from a document's public detail (through
// the gateway): 100 deletions one after the other, then a burst of 100
// deletions sent all at once. The path: the taxonomy writes a tombstone
// with the event in its outbox and nudges its relay; the relay publishes
// to JetStream; the catalog's durable consumer asks the taxonomy whether
// the ids were created anew, then holds, changes and commits the documents
// naming them, and puts them into its memory; the public detail is served
// from the gateway's micro-cache, revalidated with the catalog's memory
// every PUBLIC_CACHE_TTL. Figures: p50/p95/p99/max of each phase, and from
// the service logs the split relay / consumer / visibility. It writes
// bench/results/events.md; the findings drawn from it are kept by hand in
// bench/results/events-findings.md.
//
// The gateway's /public rate limit is off (PUBLIC_RATE_LIMIT=0): the
// pollers would otherwise be throttled.
func BenchmarkTagDeletionLatency(b *testing.B) {
	pad := padSeeds(b)
	st := NewStack(b, map[string][]string{"gateway": {"PUBLIC_RATE_LIMIT=0"}})
	var seq, burst []*delSample
	var released time.Time
	iter := 0
	for b.Loop() {
		b.StopTimer()
		iter++
		s := seedDeletion(st, fmt.Sprintf("s%d", iter))
		bu := seedDeletion(st, fmt.Sprintf("b%d", iter))
		// Warm-up: one deletion through the whole path (connections, the
		// consumer's first fetch) that is not counted.
		w := seedDeletion(st, fmt.Sprintf("w%d", iter))
		for k := range pad {
			seedDeletion(st, fmt.Sprintf("p%d-%d", iter, k))
		}
		sequentialDeletions(b, st, w[:5])
		time.Sleep(500 * time.Millisecond)
		b.StartTimer()
		sequentialDeletions(b, st, s)
		b.StopTimer()
		time.Sleep(time.Second) // let the sequential phase's tail settle
		b.StartTimer()
		released = burstDeletions(b, st, bu)
		seq, burst = append(seq, s...), append(burst, bu...)
	}
	b.StopTimer()
	time.Sleep(time.Second) // the last log lines reach st.logs
	eventTimes(st, append(slices.Clone(seq), burst...))
	ss, bs := statsOf("sequential", delSeqTarget, seq, time.Time{}), statsOf("burst", delBurstTarget, burst, released)

	for _, x := range []delStats{ss, bs} {
		for _, p := range []struct {
			n string
			v float64
		}{{"p50", 50}, {"p95", 95}, {"p99", 99}, {"max", 100}} {
			b.ReportMetric(float64(pct(x.latency, p.v))/float64(time.Millisecond), x.name+"-"+p.n+"-ms")
		}
	}

	verdict := func(d, target time.Duration) string {
		if d < target {
			return "**pass**"
		}
		return "**fail**"
	}
	sb := resultHeader("Tag deletion: DELETE answered → tag gone from the public detail", "BenchmarkTagDeletionLatency", "bench_events_test.go")
	fmt.Fprintf(sb, "| load average (1/5/15 min) at the end | %s |\n", loadAvg())
	fmt.Fprintf(sb, "| seed per phase | 1 category, %d tags, %d LINK documents; document i carries tags i, i+1, i+7 (each tag on %d documents) |\n", delTags, delTags, delPerDocTags)
	padNote := ""
	if pad > 0 {
		padNote = fmt.Sprintf(", and %d more left alone (BENCH_DELETION_PADDING=%d)", pad, pad)
	}
	fmt.Fprintf(sb, "| collection sizes | %d tags and %d documents exist when the sequential phase starts: the seeds of the warm-up, of the sequential and of the burst phase%s |\n",
		(3+pad)*delTags, (3+pad)*delTags, padNote)
	fmt.Fprintf(sb, "| sequential | %d deletions one after the other: DELETE, then GET /public/documents/:id/detail every ~%s until the tag is gone |\n", len(seq), delPollSleep)
	fmt.Fprintf(sb, "| burst | %d DELETEs released at once (one goroutine each); %d pollers round robin over the documents whose DELETE answered |\n", len(burst), delPollers)
	fmt.Fprintf(sb, "| latency | from the DELETE's answer (client side) to the first detail answer without the tag (an upper bound: it includes the poll interval) |\n")
	fmt.Fprintf(sb, "| stack | all services, FerretDB, MinIO and NATS (in the test process) on this machine; `PUBLIC_RATE_LIMIT=0` on the gateway, `PUBLIC_CACHE_TTL` its default (100 ms) |\n\n")
	fmt.Fprintf(sb, "| phase | n | p50 ms | p95 ms | p99 ms | max ms | target p99 | result |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, x := range []delStats{ss, bs} {
		fmt.Fprintf(sb, "| %s | %d | %s | %s | %s | %s | < %s | %s |\n", x.name, len(x.latency), ms(pct(x.latency, 50)), ms(pct(x.latency, 95)),
			ms(pct(x.latency, 99)), ms(pct(x.latency, 100)), x.target, verdict(pct(x.latency, 99), x.target))
	}
	fmt.Fprintf(sb, "\nWhere the time goes (from the services' log timestamps, same clock; p50 / p99 ms):\n\n")
	fmt.Fprintf(sb, "| phase | DELETE answered → event published (taxonomy relay) | published → catalog handler returned (consumer: taxonomy lookup, documents held, changed, committed) | handler returned → seen gone by a poll (gateway micro-cache, catalog memory, poll) | published → seen gone | interval between two polls of a document | polls |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range []delStats{ss, bs} {
		fmt.Fprintf(sb, "| %s | %s / %s | %s / %s | %s / %s | %s / %s | %s / %s | %d |\n", x.name,
			ms(pct(x.relay, 50)), ms(pct(x.relay, 99)), ms(pct(x.consume, 50)), ms(pct(x.consume, 99)),
			ms(pct(x.visible, 50)), ms(pct(x.visible, 99)), ms(pct(x.published, 50)), ms(pct(x.published, 99)),
			ms(pct(x.gaps, 50)), ms(pct(x.gaps, 99)), x.polls)
	}
	fmt.Fprintf(sb, "\nBurst throughput: the %d DELETEs answered between %s and %s ms after their release; "+
		"the taxonomy relay published one event every %s ms (median spacing, p90 %s ms), "+
		"the catalog consumer applied one every %s ms (median spacing, p90 %s ms); "+
		"first publication to last application %s ms.\n",
		len(burst), ms(bs.firstDel), ms(bs.lastDel), ms(pct(bs.pubGap, 50)), ms(pct(bs.pubGap, 90)),
		ms(pct(bs.applyGap, 50)), ms(pct(bs.applyGap, 90)), ms(span(burst)))
	fmt.Fprintf(sb, "\n(%d of %d sequential and %d of %d burst deletions matched in the logs.)\n", len(ss.relay), len(seq), len(bs.relay), len(burst))
	fmt.Fprintf(sb, "\nWhat these figures mean, what bounds each phase and what was tried: [events-findings.md](events-findings.md) "+
		"(written by hand, apart from this file, which each run writes anew).\n")
	writeResult(b, "events.md", sb.String())
	b.Logf("\n%s", sb.String())
}
