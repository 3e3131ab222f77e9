package changes_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/testkit"
)

// A client that never reads is closed once a message cannot reach it
// within the write timeout: the stream holds no more than its pull batch
// meanwhile, and its consumer goes with it.
func TestAClientThatNeverReadsIsClosed(t *testing.T) {
	t.Parallel()
	cfg := config
	cfg.WriteTimeout = time.Second
	js, s, srv := setup(t, cfg)
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	testkit.Must(t, err, "dial")
	defer conn.Close()
	_, err = conn.Write([]byte("GET /bo/changes HTTP/1.1\r\nHost: x\r\n\r\n"))
	testkit.Must(t, err, "request")
	deadline := time.Now().Add(5 * time.Second)
	for s.Open() != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	big := strings.Repeat("x", 256<<10)
	for range 200 { // 50 MiB: more than any socket buffers
		publish(t, js, events.TagRenamed, events.TagData{TagID: "t", CategoryID: "c", Name: big})
		if s.Open() == 0 {
			break
		}
	}
	deadline = time.Now().Add(15 * time.Second)
	for s.Open() != 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if s.Open() == 0 {
		s.Wait() // its consumer removed
	}
	st, err := js.Stream(context.Background(), events.Stream)
	testkit.Must(t, err, "stream")
	if info, _ := st.Info(context.Background()); s.Open() != 0 || info.State.Consumers != 0 {
		t.Errorf("a client that never reads: %d streams, %d consumers left; want none", s.Open(), info.State.Consumers)
	}
}
