package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
	"github.com/nats-io/nats.go/jetstream"
)

// hookReceiver is a webhook receiver started by a test on loopback. It keeps
// every request it gets; answer decides the status of the n-th (from 1).
type hookReceiver struct {
	srv    *httptest.Server
	answer func(n int, r *http.Request) int

	mu  sync.Mutex
	got []hook
}

// hook is one request a receiver got.
type hook struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// payload is a webhook's body.
type payload struct {
	Type      string          `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

func newHookReceiver(t *testing.T, answer func(n int, r *http.Request) int) *hookReceiver {
	t.Helper()
	rc := &hookReceiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, hook{Header: r.Header.Clone(), Body: body, At: time.Now()})
		n := len(rc.got)
		rc.mu.Unlock()
		status := http.StatusNoContent
		if rc.answer != nil {
			status = rc.answer(n, r)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) hooks() []hook {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hook(nil), rc.got...)
}

// distinct returns the hooks with a webhook-id not seen before, in order
// of first receipt.
func (rc *hookReceiver) distinct() []hook {
	seen := map[string]bool{}
	var out []hook
	for _, h := range rc.hooks() {
		if id := h.Header.Get("webhook-id"); !seen[id] {
			seen[id] = true
			out = append(out, h)
		}
	}
	return out
}

// verify checks h with the Standard Webhooks reference library, as a
// receiver holding secret would.
func verify(t *testing.T, secret string, h hook) payload {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	testkit.Must(t, err, "load the secret")
	if err := wh.Verify(h.Body, h.Header); err != nil {
		t.Fatalf("the webhook %s does not verify with the secret: %v (signature %q)", h.Header.Get("webhook-id"), err, h.Header.Get("webhook-signature"))
	}
	var p payload
	if err := json.Unmarshal(h.Body, &p); err != nil {
		t.Fatalf("body %s: %v", h.Body, err)
	}
	return p
}

type subscribed struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	Status string `json:"status"`
}

func (st *Stack) subscribe(url string, types ...string) subscribed {
	st.t.Helper()
	var s subscribed
	st.Must("POST", "/bo/webhooks", map[string]any{"url": url, "eventTypes": types, "description": "test receiver"}, 201).JSON(st.t, &s)
	if !strings.HasPrefix(s.Secret, "whsec_") {
		st.t.Fatalf("secret %q, want whsec_…", s.Secret)
	}
	return s
}

// tagEvents creates a category with n tags and deletes the tags one by
// one: n tag.deleted events. It returns the tags' ids in the order of their
// events in the stream: taxonomy's outbox relay publishes the events of
// different tags concurrently (they have no order to keep), so a burst of
// deletions may reach the stream in another order than it was made, and
// webhooks keep the stream's order.
func (st *Stack) tagEvents(category string, n int) []string {
	st.t.Helper()
	return st.streamOrder(st.deleteTags(category, n))
}

// deleteTags creates a category with n tags and deletes the tags one by
// one; it returns the tags' ids in that order.
func (st *Stack) deleteTags(category string, n int) []string {
	st.t.Helper()
	st.Must("POST", "/bo/tags-categories", map[string]string{"id": category, "name": "Cat " + category}, 201)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-t%d", category, i)
		st.Must("POST", "/bo/tags", map[string]string{"id": id, "name": "Tag " + id, "categoryId": category}, 201)
		ids = append(ids, id)
	}
	for _, id := range ids {
		st.Must("DELETE", "/bo/tags/"+id, nil, 204)
	}
	return ids
}

// streamOrder returns the tags of ids in the order of their tag.deleted
// events in the LIBRARY stream.
func (st *Stack) streamOrder(ids []string) []string {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, js, err := events.Connect(ctx, "nats://"+st.natsAt, "e2e-order", testkit.Logger(st.t))
	testkit.Must(st.t, err, "connect to NATS")
	defer nc.Close()
	c, err := js.OrderedConsumer(ctx, events.Stream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{events.TagDeleted}})
	testkit.Must(st.t, err, "ordered consumer")
	var order []string
	for len(order) < len(ids) {
		msg, err := c.Next(jetstream.FetchMaxWait(25 * time.Second))
		testkit.Must(st.t, err, fmt.Sprintf("the tag.deleted events in the stream (%d of %d)", len(order), len(ids)))
		var e struct {
			Data struct {
				TagID string `json:"tagId"`
			} `json:"data"`
		}
		testkit.Must(st.t, json.Unmarshal(msg.Data(), &e), "event")
		if slices.Contains(ids, e.Data.TagID) && !slices.Contains(order, e.Data.TagID) {
			order = append(order, e.Data.TagID)
		}
	}
	return order
}

func tagIDOf(t *testing.T, p payload) string {
	var d struct {
		TagID string `json:"tagId"`
	}
	if err := json.Unmarshal(p.Data, &d); err != nil || p.Type != "tag.deleted" {
		t.Fatalf("payload %+v: want a tag.deleted with a tagId", p)
	}
	return d.TagID
}

// requireOrder checks the receiver got exactly the tag.deleted events of
// ids, in order, each signed with secret.
func requireOrder(t *testing.T, rc *hookReceiver, secret string, ids []string) {
	t.Helper()
	hs := rc.distinct()
	if len(hs) != len(ids) {
		t.Fatalf("%d distinct webhooks, want %d", len(hs), len(ids))
	}
	for i, h := range hs {
		if got := tagIDOf(t, verify(t, secret, h)); got != ids[i] {
			t.Errorf("webhook %d is about %s, want %s (event order)", i, got, ids[i])
		}
	}
}

// TestWebhooksDeliverSignedEventsInOrder (issue 26): signed per Standard
// Webhooks, verified with its reference library; in event order; a
// receiver failing with 500 and one answering 410 delay nobody else; 410
// disables its subscription with the reason; viewers never see secrets.
func TestWebhooksDeliverSignedEventsInOrder(t *testing.T) {
	st := NewStack(t, nil)
	good := newHookReceiver(t, nil)
	failing := newHookReceiver(t, func(int, *http.Request) int { return 500 })
	gone := newHookReceiver(t, func(int, *http.Request) int { return 410 })
	// Deletions only: creating the tags makes events too.
	g := st.subscribe(good.srv.URL+"/hook?token=abc", "tag.deleted")
	f := st.subscribe(failing.srv.URL, "tag.deleted")
	x := st.subscribe(gone.srv.URL, "tag.deleted")

	ids := st.tagEvents("wh", 5)
	Eventually(t, 15*time.Second, "five webhooks at the healthy receiver", func() bool { return len(good.distinct()) >= 5 })
	requireOrder(t, good, g.Secret, ids)
	h := good.hooks()[0]
	if !strings.HasPrefix(h.Header.Get("webhook-id"), "msg_") || h.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", h.Header)
	}

	// 410: disabled, with the reason; nothing more sent to it.
	Eventually(t, 15*time.Second, "the 410 subscription disabled", func() bool {
		var s struct{ Status, DisabledReason string }
		st.Must("GET", "/bo/webhooks/"+x.ID, nil, 200).JSON(t, &s)
		return s.Status == "disabled" && strings.Contains(s.DisabledReason, "410 Gone")
	})
	if n := len(gone.hooks()); n != 1 {
		t.Errorf("the 410 receiver got %d requests, want 1", n)
	}

	// 500: retried, logged, still pending; the first event holds its queue.
	Eventually(t, 20*time.Second, "a second attempt at the failing receiver", func() bool { return len(failing.hooks()) >= 2 })
	var log struct {
		Items []struct {
			ID, Status, WebhookID string
			AttemptCount          int
			Attempts              []struct {
				StatusCode int
				Error      string
			}
		}
	}
	// The receiver got the second attempt a moment before the log has it.
	Eventually(t, 10*time.Second, "two attempts in the failing subscription's log", func() bool {
		st.Must("GET", "/bo/webhooks/"+f.ID+"/deliveries", nil, 200).JSON(t, &log)
		return len(log.Items) == 5 && log.Items[len(log.Items)-1].AttemptCount >= 2
	})
	if len(log.Items) != 5 {
		t.Fatalf("the failing subscription's log has %d deliveries, want 5", len(log.Items))
	}
	oldest := log.Items[len(log.Items)-1]
	if oldest.Status != "pending" || oldest.AttemptCount < 2 || oldest.Attempts[0].Error != "HTTP 500" {
		t.Errorf("the oldest failing delivery: %+v", oldest)
	}
	for _, h := range failing.hooks() {
		if h.Header.Get("webhook-id") != oldest.WebhookID {
			t.Errorf("the failing receiver got %s before the first event succeeded (order)", h.Header.Get("webhook-id"))
		}
	}

	// A manual retry sends a delivered event again, with the same id.
	st.Must("POST", "/bo/webhooks/"+g.ID+"/deliveries/"+strings.TrimPrefix(h.Header.Get("webhook-id"), "msg_")+"/retry", nil, 202)
	Eventually(t, 10*time.Second, "the retried webhook", func() bool { return len(good.hooks()) >= 6 })
	if last := good.hooks()[5]; last.Header.Get("webhook-id") != h.Header.Get("webhook-id") {
		t.Errorf("retried as %s, want %s", last.Header.Get("webhook-id"), h.Header.Get("webhook-id"))
	}

	// Viewers read without secrets and cannot write.
	viewer := []string{"Authorization", "Bearer " + ViewerToken}
	for _, p := range []string{"/bo/webhooks", "/bo/webhooks/" + g.ID} {
		r := st.Req("GET", p, nil, viewer...)
		if r.Status != 200 || strings.Contains(string(r.Body), "secret\"") || strings.Contains(string(r.Body), "whsec_") {
			t.Errorf("viewer GET %s: %d %s", p, r.Status, r.Body)
		}
	}
	if r := st.Req("POST", "/bo/webhooks", map[string]any{"url": good.srv.URL, "eventTypes": []string{"*"}}, viewer...); r.Status != 403 {
		t.Errorf("viewer POST: %d", r.Status)
	}
	if logs := st.logs.String(); strings.Contains(logs, g.Secret) || strings.Contains(logs, strings.TrimPrefix(g.Secret, "whsec_")) {
		t.Error("a secret is in the services' logs")
	}
}

// TestWebhookBadInput: a URL that is not a URL and an unknown event type
// are one 422 naming both; nothing is created.
func TestWebhookBadInput(t *testing.T) {
	st := NewStack(t, nil)
	r := st.BO("POST", "/bo/webhooks", map[string]any{"url": "not a url", "eventTypes": []string{"document.*", "document.exploded"}})
	if p := r.Problem(t); r.Status != 422 || p.Fields() != "url,eventTypes[1]" {
		t.Errorf("%d %s, want 422 on url and eventTypes[1]", r.Status, r.Body)
	}
	var list struct{ Items []any }
	st.Must("GET", "/bo/webhooks", nil, 200).JSON(t, &list)
	if len(list.Items) != 0 {
		t.Errorf("%d subscriptions after a refused create", len(list.Items))
	}
}

// TestWebhookSecretRotation: after a rotation, every webhook carries two
// signatures, and a receiver holding either secret verifies it.
func TestWebhookSecretRotation(t *testing.T) {
	st := NewStack(t, nil)
	rc := newHookReceiver(t, nil)
	s := st.subscribe(rc.srv.URL, "tag.deleted")
	var rotated subscribed
	st.Must("POST", "/bo/webhooks/"+s.ID+"/rotate-secret", nil, 200).JSON(t, &rotated)
	if rotated.Secret == s.Secret || !strings.HasPrefix(rotated.Secret, "whsec_") {
		t.Fatalf("rotated secret %q", rotated.Secret)
	}
	ids := st.tagEvents("rot", 1)
	Eventually(t, 15*time.Second, "the webhook", func() bool { return len(rc.hooks()) >= 1 })
	h := rc.hooks()[0]
	if n := len(strings.Fields(h.Header.Get("webhook-signature"))); n != 2 {
		t.Errorf("%d signatures during the rotation, want 2", n)
	}
	for _, secret := range []string{s.Secret, rotated.Secret} {
		if got := tagIDOf(t, verify(t, secret, h)); got != ids[0] {
			t.Errorf("about %s, want %s", got, ids[0])
		}
	}
}

// TestWebhookKilledMidDelivery: the webhook service killed (SIGKILL) while
// a receiver holds its request loses nothing: after the restart every
// event arrives, in order, the interrupted one again with the same id.
func TestWebhookKilledMidDelivery(t *testing.T) {
	st := NewStack(t, nil)
	holding := make(chan struct{}, 1)
	rc := newHookReceiver(t, func(n int, _ *http.Request) int {
		if n == 2 {
			holding <- struct{}{}
			time.Sleep(3 * time.Second) // the service dies meanwhile
		}
		return 200
	})
	s := st.subscribe(rc.srv.URL, "tag.deleted")
	ids := st.tagEvents("kill", 6)
	select {
	case <-holding:
	case <-time.After(15 * time.Second):
		t.Fatal("the second webhook never came")
	}
	wh := st.procs["webhook"]
	testkit.Must(t, syscall.Kill(wh.Pid(), syscall.SIGKILL), "kill webhook")
	<-wh.Done()
	st.Start("webhook")
	Eventually(t, 60*time.Second, "all six events after the restart (a killed process's lease lapses within 25 s)", func() bool { return len(rc.distinct()) >= 6 })
	requireOrder(t, rc, s.Secret, ids)
	if len(rc.hooks()) < 7 {
		t.Errorf("%d requests, want the interrupted one again (at least once)", len(rc.hooks()))
	}
}

// TestWebhookNATSOutage: events made while NATS is down wait in the
// services' outboxes, and reach the receiver once NATS is back.
func TestWebhookNATSOutage(t *testing.T) {
	st := NewStack(t, nil)
	rc := newHookReceiver(t, nil)
	s := st.subscribe(rc.srv.URL, "tag.deleted", "category.deleted")
	st.StopNATS()
	ids := st.deleteTags("nats", 3) // no stream to read their order from meanwhile
	time.Sleep(10 * time.Second)    // down for a while: every publish fails meanwhile
	if n := len(rc.hooks()); n != 0 {
		t.Fatalf("%d webhooks while NATS was down", n)
	}
	st.StartNATS()
	Eventually(t, 60*time.Second, "the three events after NATS came back", func() bool { return len(rc.distinct()) >= 3 })
	// Every event, each once; in the stream's order, which is the order
	// the taxonomy's relay published them once NATS was back (not
	// necessarily the order of the deletions).
	got := map[string]bool{}
	for _, h := range rc.distinct() {
		got[tagIDOf(t, verify(t, s.Secret, h))] = true
	}
	for _, id := range ids {
		if !got[id] {
			t.Errorf("the event of %s never came", id)
		}
	}
}

// TestWebhookSSRF: without an allowlist, a receiver on loopback is refused
// when connecting, whatever name leads there; a literal private address is
// refused at once; a redirect to loopback is not followed.
func TestWebhookSSRF(t *testing.T) {
	st := NewStack(t, map[string][]string{"webhook": {"WEBHOOK_ALLOWED_NETWORKS="}})
	rc := newHookReceiver(t, nil)
	port := rc.srv.URL[strings.LastIndex(rc.srv.URL, ":")+1:]

	s := st.subscribe("http://localhost:"+port+"/hook", "*") // a name: checked when connecting
	var ping struct {
		Status   string
		Attempts []struct{ Error string }
	}
	st.Must("POST", "/bo/webhooks/"+s.ID+"/ping", nil, 200).JSON(t, &ping)
	if ping.Status != "failed" || len(ping.Attempts) != 1 || !strings.Contains(ping.Attempts[0].Error, "loopback address") {
		t.Errorf("ping to localhost: %+v, want refused as loopback", ping)
	}
	for _, u := range []string{"http://127.0.0.1:" + port, "http://10.0.0.1/", "http://169.254.169.254/latest/meta-data", "http://[::1]:" + port} {
		r := st.BO("POST", "/bo/webhooks", map[string]any{"url": u, "eventTypes": []string{"*"}})
		if r.Status != 422 || !strings.Contains(string(r.Body), "is refused") {
			t.Errorf("POST %s: %d %s, want 422", u, r.Status, r.Body)
		}
	}
	if n := len(rc.hooks()); n != 0 {
		t.Errorf("the loopback receiver got %d requests", n)
	}
}

// TestWebhookRedirectNotFollowed: a receiver redirecting to another
// address is a failed attempt; the other address gets nothing.
func TestWebhookRedirectNotFollowed(t *testing.T) {
	st := NewStack(t, nil)
	target := newHookReceiver(t, nil)
	redirect := newHookReceiver(t, func(_ int, _ *http.Request) int { return http.StatusTemporaryRedirect })
	redirect.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL, http.StatusTemporaryRedirect)
	})
	s := st.subscribe(redirect.srv.URL, "*")
	var ping struct {
		Status   string
		Attempts []struct {
			StatusCode int
			Error      string
		}
	}
	st.Must("POST", "/bo/webhooks/"+s.ID+"/ping", nil, 200).JSON(t, &ping)
	if ping.Status != "failed" || ping.Attempts[0].StatusCode != 307 || !strings.Contains(ping.Attempts[0].Error, "not followed") {
		t.Errorf("ping: %+v", ping)
	}
	if n := len(target.hooks()); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}
