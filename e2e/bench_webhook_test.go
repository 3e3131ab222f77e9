package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
)

// Webhook benchmark settings (issue 26).
const (
	whEvents    = 1000
	whHealthy   = 9
	whRate      = 100 // events published per second
	whP99Target = 250 * time.Millisecond
	// whWait bounds the wait for the last deliveries after the last event.
	whWait = 5 * time.Minute
)

// BenchmarkWebhookDelivery: 10 subscriptions to every event, one of them a
// receiver that never answers (each attempt times out after 10 s); 1,000
// tag.deleted events published to JetStream at whRate per second. Figures:
// publication to receipt at the nine healthy receivers (p50/p99/max), next
// to the anchor measured in the same run, publication to receipt by a
// plain NATS subscriber (the transport's own floor); and the webhook
// process's resident memory while the tenth receiver is down for the
// whole run. Writes bench/results/webhooks.md, also when not every
// delivery arrived within whWait (the count says so, and the row fails).
func BenchmarkWebhookDelivery(b *testing.B) {
	st := NewStack(b, nil)
	var mu sync.Mutex
	published := map[string]time.Time{}
	var latencies []time.Duration
	for i := range whHealthy {
		rc := newBenchReceiver(b, func(id string, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if p, ok := published[strings.TrimPrefix(id, "msg_")]; ok {
				latencies = append(latencies, at.Sub(p))
			}
		})
		st.subscribe(rc.URL+"/"+strconv.Itoa(i), "*")
	}
	hang := make(chan struct{})
	down := newBenchReceiver(b, func(string, time.Time) { <-hang })
	st.subscribe(down.URL, "*")
	defer close(hang)

	nc, err := nats.Connect("nats://" + st.natsAt)
	testkit.Must(b, err, "connect to NATS")
	defer nc.Close()
	js, err := jetstream.New(nc)
	testkit.Must(b, err, "jetstream")
	var anchor []time.Duration
	sub, err := nc.Subscribe(events.TagDeleted, func(m *nats.Msg) {
		at := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if p, ok := published[m.Header.Get(jetstream.MsgIDHeader)]; ok {
			anchor = append(anchor, at.Sub(p))
		}
	})
	testkit.Must(b, err, "subscribe")
	defer sub.Unsubscribe()

	pid := st.Pid("webhook")
	rssStart := rss(pid)
	rssMax := rssStart
	for b.Loop() {
		tick := time.NewTicker(time.Second / whRate)
		for i := range whEvents {
			<-tick.C
			publishTagDeleted(b, js, &mu, published, i)
			if i%100 == 0 {
				rssMax = max(rssMax, rss(pid))
			}
		}
		tick.Stop()
		// Waits for every delivery, but not for ever: a run that falls
		// behind still writes its figures (what arrived, and how many).
		deadline := time.Now().Add(whWait)
		for time.Now().Before(deadline) {
			mu.Lock()
			n := len(latencies)
			mu.Unlock()
			if n >= whEvents*whHealthy {
				break
			}
			rssMax = max(rssMax, rss(pid))
			time.Sleep(100 * time.Millisecond)
		}
	}
	rssEnd := rss(pid)
	mu.Lock()
	defer mu.Unlock()
	writeWebhookResult(b, slices.Clone(latencies), slices.Clone(anchor), rssStart, max(rssMax, rssEnd), rssEnd)
}

func publishTagDeleted(b *testing.B, js jetstream.JetStream, mu *sync.Mutex, published map[string]time.Time, i int) {
	ev, err := events.New(context.Background(), "/bench", events.TagDeleted,
		events.TagDeletedData{TagID: fmt.Sprintf("bench-%d", i), CategoryID: "bench"}, time.Now())
	testkit.Must(b, err, "event")
	msg := nats.NewMsg(events.TagDeleted)
	msg.Data, err = json.Marshal(ev.Envelope)
	testkit.Must(b, err, "encode")
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID)
	mu.Lock()
	published[ev.ID] = time.Now()
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = js.PublishMsg(ctx, msg)
	testkit.Must(b, err, "publish")
}

// newBenchReceiver answers every webhook 204 after calling got with its
// webhook-id and when it arrived.
func newBenchReceiver(tb testing.TB, got func(id string, at time.Time)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got(r.Header.Get("webhook-id"), time.Now())
		w.WriteHeader(http.StatusNoContent)
	}))
	tb.Cleanup(srv.Close)
	return srv
}

// rss is the resident memory of process pid in bytes (0 if unknown).
func rss(pid int) int64 { return procStatusBytes(pid, "VmRSS:") }

// peakRSS is the most resident memory process pid has had, in bytes (0
// if unknown).
func peakRSS(pid int) int64 { return procStatusBytes(pid, "VmHWM:") }

// procStatusBytes reads a kB field of /proc/<pid>/status, in bytes.
func procStatusBytes(pid int, field string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func writeWebhookResult(b *testing.B, lat, anchor []time.Duration, start, peak, end int64) {
	p99 := pct(lat, 99)
	verdict := "**fail**"
	if p99 < whP99Target && len(lat) >= whEvents*whHealthy {
		verdict = "**pass**"
	}
	memVerdict := "**fail**"
	if end <= start+32<<20 {
		memVerdict = "**pass**"
	}
	ratio := 0.0
	if a := pct(anchor, 99); a > 0 {
		ratio = float64(p99) / float64(a)
	}
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
	sb := resultHeader("Webhooks: event publication → receipt", "BenchmarkWebhookDelivery", "bench_webhook_test.go")
	fmt.Fprintf(sb, "| load average (1/5/15 min) at the end | %s |\n", loadAvg())
	fmt.Fprintf(sb, "| setup | 10 subscriptions to `*`: 9 receivers answering 204 at once, 1 that never answers (every attempt times out after 10 s, retried); %d tag.deleted events published to JetStream at %d/s |\n", whEvents, whRate)
	fmt.Fprintf(sb, "| latency | from just before the JetStream publish to the receiver's handler (same clock) |\n")
	fmt.Fprintf(sb, "| anchor | the same events received by a plain NATS subscriber in the benchmark process |\n\n")
	fmt.Fprintf(sb, "| figure | n | p50 ms | p99 ms | max ms | target | ratio to anchor p99 | result |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	fmt.Fprintf(sb, "| webhook receipt, 9 healthy receivers | %d of %d | %s | %s | %s | p99 < %s, all within %s | %.1f | %s |\n", len(lat), whEvents*whHealthy, ms(pct(lat, 50)), ms(p99), ms(pct(lat, 100)), whP99Target, whWait, ratio, verdict)
	fmt.Fprintf(sb, "| anchor: NATS subscriber | %d | %s | %s | %s | | 1 | |\n", len(anchor), ms(pct(anchor, 50)), ms(pct(anchor, 99)), ms(pct(anchor, 100)))
	fmt.Fprintf(sb, "\n| webhook process RSS | start | peak | end | target | result |\n|---|---:|---:|---:|---|---|\n")
	fmt.Fprintf(sb, "| one receiver down for the whole run | %d MiB | %d MiB | %d MiB | end ≤ start + 32 MiB | %s |\n", start>>20, peak>>20, end>>20, memVerdict)
	writeResult(b, "webhooks.md", sb.String())
	b.Logf("\n%s", sb.String())
}
