package changes_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/gateway/internal/changes"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// setup starts NATS with the library's streams and a stream server on it.
func setup(t *testing.T, cfg changes.Config) (jetstream.JetStream, *changes.Server, *httptest.Server) {
	t.Helper()
	return setupUntil(t, t.Context(), cfg)
}

// setupUntil is setup with streams that end when ctx does (the gateway's
// shutdown).
func setupUntil(t *testing.T, until context.Context, cfg changes.Config) (jetstream.JetStream, *changes.Server, *httptest.Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, js, err := events.Connect(ctx, testkit.NATS(t).ClientURL(), "changes-test", testkit.Logger(t))
	testkit.Must(t, err, "connect")
	t.Cleanup(nc.Close)
	testkit.Must(t, events.EnsureStream(ctx, js), "streams")
	s := changes.New(until, js, cfg, testkit.Logger(t))
	mux := http.NewServeMux()
	mux.Handle("/public/changes", s.Handler(changes.Public, func(*http.Request) string { return "client" }))
	mux.Handle("/bo/changes", s.Handler(changes.BackOffice, func(*http.Request) string { return "client" }))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return js, s, srv
}

var config = changes.Config{Heartbeat: 200 * time.Millisecond, MaxStreams: 2, WriteTimeout: 5 * time.Second}

func publish(t *testing.T, js jetstream.JetStream, subject string, data any) {
	t.Helper()
	ev, err := events.New(context.Background(), "/taxonomy", subject, data, time.Now())
	testkit.Must(t, err, "event")
	m, err := events.MessageOf(ev)
	testkit.Must(t, err, "message")
	_, err = js.Publish(context.Background(), subject, m.Data)
	testkit.Must(t, err, "publish")
}

// sse is one open stream, read message by message.
type sse struct {
	res    *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
	beats  int
}

type message struct {
	ID    uint64
	Event string
	Data  changes.Data
}

func open(t *testing.T, url, lastID string) *sse {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("GET %s: %v", url, err)
	}
	t.Cleanup(cancel)
	return &sse{res: res, r: bufio.NewReader(res.Body), cancel: cancel}
}

// next returns the next message, counting the heartbeats before it.
func (s *sse) next(t *testing.T) message {
	t.Helper()
	m, err := s.tryNext()
	if err != nil {
		t.Fatalf("read the stream: %v", err)
	}
	return m
}

// tryNext is next, for a goroutine: it says why it has no message.
func (s *sse) tryNext() (message, error) {
	var m message
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return m, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && m.Event != "":
			return m, nil
		case line == ": heartbeat":
			s.beats++
		case strings.HasPrefix(line, "id: "):
			m.ID, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			m.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &m.Data); err != nil {
				return m, err
			}
		}
	}
}

// A stream sends each change with its stream sequence as id, heartbeats
// between; a resume with Last-Event-ID gets exactly what was missed; the
// public stream leaves out what the app may not see.
func TestStreamResumesWithoutAGap(t *testing.T) {
	t.Parallel()
	js, _, srv := setup(t, config)
	bo := open(t, srv.URL+"/bo/changes", "")
	pub := open(t, srv.URL+"/public/changes", "")
	if ct := bo.res.Header.Get("Content-Type"); bo.res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("GET /bo/changes: %d %s", bo.res.StatusCode, ct)
	}
	publish(t, js, events.TagCreated, events.TagData{TagID: "t1", CategoryID: "c", Name: "One", Actor: "alice"})
	publish(t, js, events.MediaUploaded, events.MediaUploadedData{MediaID: "m1", Actor: "alice"})
	publish(t, js, events.TagRenamed, events.TagData{TagID: "t1", CategoryID: "c", Name: "Uno", Actor: "alice"})
	var got []message
	for range 3 {
		got = append(got, bo.next(t))
	}
	if got[0].Event != "tag.created" || got[1].Event != "media.uploaded" || got[2].Event != "tag.renamed" ||
		got[0].ID >= got[1].ID || got[1].ID >= got[2].ID || !got[0].Data.Sync {
		t.Fatalf("back-office messages %+v", got)
	}
	p1, p2 := pub.next(t), pub.next(t)
	if p1.Event != "tag.created" || p2.Event != "tag.renamed" || p2.ID != got[2].ID || strings.Contains(string(p1.Data.Payload), "alice") {
		t.Errorf("public messages %+v %+v: want the tag's two, without the media nor the actor", p1, p2)
	}
	time.Sleep(3 * config.Heartbeat)
	publish(t, js, events.TagDeleted, events.TagDeletedData{TagID: "t1", CategoryID: "c"})
	if m := bo.next(t); m.Event != "tag.deleted" || bo.beats < 2 {
		t.Errorf("after an idle while: %+v and %d heartbeats, want tag.deleted after two or more", m, bo.beats)
	}

	// Gone after the first message; two changes meanwhile.
	bo.cancel()
	publish(t, js, events.CategoryCreated, events.CategoryData{CategoryID: "c2", Name: "Two"})
	publish(t, js, events.CategoryRenamed, events.CategoryData{CategoryID: "c2", Name: "Deux"})
	again := open(t, srv.URL+"/bo/changes", strconv.FormatUint(got[0].ID, 10))
	want := []string{"media.uploaded", "tag.renamed", "tag.deleted", "category.created", "category.renamed"}
	for i, w := range want {
		if m := again.next(t); m.Event != w || m.ID != got[0].ID+uint64(i)+1 {
			t.Errorf("resumed message %d = %s #%d, want %s #%d", i, m.Event, m.ID, w, got[0].ID+uint64(i)+1)
		}
	}
}

// A Last-Event-ID that is not a number is 400; one the stream no longer
// holds, or never did, gets a reset telling the client to sync from
// scratch, then what follows.
func TestResumeFromTooFarBack(t *testing.T) {
	t.Parallel()
	js, _, srv := setup(t, config)
	req, _ := http.NewRequest("GET", srv.URL+"/public/changes", nil)
	req.Header.Set("Last-Event-ID", "yesterday")
	res, err := http.DefaultClient.Do(req)
	testkit.Must(t, err, "GET")
	_ = res.Body.Close()
	if res.StatusCode != 400 || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("garbage Last-Event-ID: %d %s, want a 400 problem", res.StatusCode, res.Header.Get("Content-Type"))
	}
	for range 3 {
		publish(t, js, events.TagCreated, events.TagData{TagID: "t", CategoryID: "c", Name: "T"})
	}
	st, err := js.Stream(context.Background(), events.Stream)
	testkit.Must(t, err, "stream")
	testkit.Must(t, st.Purge(context.Background()), "purge") // as MaxAge would: first seq 4
	newest := uint64(3)
	for _, last := range []string{"1", "999"} {
		s := open(t, srv.URL+"/public/changes", last)
		if m := s.next(t); m.Event != changes.Reset || m.ID != newest || !m.Data.FromScratch {
			t.Errorf("Last-Event-ID %s: first message %+v, want a reset with id %d (the newest)", last, m, newest)
		}
		newest++
		publish(t, js, events.TagRenamed, events.TagData{TagID: "t", CategoryID: "c", Name: "U"})
		if m := s.next(t); m.Event != "tag.renamed" {
			t.Errorf("Last-Event-ID %s: after the reset %+v, want the next change", last, m)
		}
		s.cancel()
	}
}

// Streams past the replica's cap are 503; a stream whose client leaves
// ends, with its goroutines and its consumer.
// Not parallel: it counts the process's goroutines.
func TestStreamsEndWithTheirClients(t *testing.T) {
	js, s, srv := setup(t, config)
	before := runtime.NumGoroutine()
	a, b := open(t, srv.URL+"/bo/changes", ""), open(t, srv.URL+"/public/changes", "")
	publish(t, js, events.TagCreated, events.TagData{TagID: "t", CategoryID: "c", Name: "T"})
	a.next(t)
	b.next(t)
	res, err := http.Get(srv.URL + "/bo/changes")
	testkit.Must(t, err, "GET")
	_ = res.Body.Close()
	if res.StatusCode != 503 || res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("a third stream on a replica capped at two: %d %v, want a 503 problem with Retry-After", res.StatusCode, res.Header)
	}
	st, err := js.Stream(context.Background(), events.Stream)
	testkit.Must(t, err, "stream")
	if info, _ := st.Info(context.Background()); info.State.Consumers != 2 {
		t.Errorf("%d consumers with two streams open, want 2", info.State.Consumers)
	}
	a.cancel()
	b.cancel()
	deadline := time.Now().Add(10 * time.Second)
	for s.Open() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	s.Wait()
	if info, _ := st.Info(context.Background()); s.Open() != 0 || info.State.Consumers != 0 {
		t.Errorf("after the clients left: %d streams, %d consumers; want none", s.Open(), info.State.Consumers)
	}
	http.DefaultClient.CloseIdleConnections()
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the streams ended, %d before", n, before)
	}
}

// One client address may hold MaxPerClient streams (429 past it); a
// gateway that shuts down ends every stream, so its clients reconnect
// elsewhere.
func TestPerClientCapAndShutdown(t *testing.T) {
	t.Parallel()
	shutdown, stop := context.WithCancel(context.Background())
	defer stop()
	cfg := config
	cfg.MaxStreams, cfg.MaxPerClient = 10, 1
	_, s, srv := setupUntil(t, shutdown, cfg)
	a := open(t, srv.URL+"/public/changes", "")
	res, err := http.Get(srv.URL + "/bo/changes")
	testkit.Must(t, err, "GET")
	_ = res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" {
		t.Errorf("a second stream from one client capped at one: %d, want 429 with Retry-After", res.StatusCode)
	}
	stop()
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := a.r.ReadString('\n'); err != nil {
				done <- err
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open 5 s after the shutdown began")
	}
	s.Wait()
}
