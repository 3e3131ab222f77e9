package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// slowRequest sends head (request line and headers, "\n"-separated) to
// base, then trickles body one byte a second, and returns the status of
// the answer and how long it took (0 and the time waited when none came
// within wait).
func slowRequest(t *testing.T, base, head, body string, wait time.Duration) (int, bool, time.Duration) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Error(err)
		return 0, false, 0
	}
	defer conn.Close()
	start := time.Now()
	if _, err := io.WriteString(conn, strings.ReplaceAll(head, "\n", "\r\n")+"\r\n\r\n"); err != nil {
		t.Error(err)
		return 0, false, 0
	}
	go func() {
		for i := range len(body) {
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	_ = conn.SetReadDeadline(start.Add(wait))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, false, time.Since(start)
	}
	res.Body.Close()
	return res.StatusCode, res.Close, time.Since(start)
}

// TestSlowBodiesHoldNoConnection (issue 21 item 8) replays the review
// through the real gateway: GET /public/config declaring a body of 1,000
// bytes that never comes, POST /bo/documents without a token on the admin
// listener the same, and 300 connections trickling a body one byte a
// second. Before, none was answered (the gateway read a declared body
// under 256 KiB before answering, for up to HTTP_READ_TIMEOUT, 30 min);
// now the first two answer at once and every trickle is cut at
// BODY_READ_TIMEOUT with 408.
func TestSlowBodiesHoldNoConnection(t *testing.T) {
	st := NewStack(t, map[string][]string{"gateway": {"BODY_READ_TIMEOUT=3s"}})
	for _, c := range []struct {
		name, base, head string
		want             int
	}{
		{"GET /public/config with a body that never comes", st.URL,
			"GET /public/config HTTP/1.1\nHost: x\nContent-Length: 1000", 200},
		{"POST /bo/documents without a token", st.AdminURL,
			"POST /bo/documents HTTP/1.1\nHost: x\nContent-Type: application/json\nContent-Length: 1000", 401},
	} {
		status, closing, took := slowRequest(t, c.base, c.head, "", 10*time.Second)
		if status != c.want || !closing || took > 2*time.Second {
			t.Errorf("%s: %d in %s (closing %v), want %d at once, closing the connection", c.name, status, took, closing, c.want)
		}
	}

	const conns = 300
	json := "POST /bo/documents HTTP/1.1\nHost: x\nAuthorization: Bearer " + Token +
		"\nContent-Type: application/json\nContent-Length: 1000"
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := map[int]int{}
	var slowest time.Duration
	for i := range conns {
		head, base := json, st.AdminURL
		if i%3 == 0 { // and a public route that takes no body
			head, base = "GET /public/config HTTP/1.1\nHost: x\nContent-Length: 1000", st.URL
		}
		wg.Go(func() {
			status, _, took := slowRequest(t, base, head, strings.Repeat("x", 1000), 30*time.Second)
			mu.Lock()
			defer mu.Unlock()
			answered[status]++
			slowest = max(slowest, took)
		})
	}
	wg.Wait()
	if answered[0] > 0 || answered[http.StatusRequestTimeout] != conns*2/3 || slowest > 15*time.Second {
		t.Errorf("%d trickling connections: answers by status %v (0: none within 30 s), the slowest after %s; want 408 for the %d bodies, an answer for every read, all within seconds",
			conns, answered, slowest.Round(time.Second), conns*2/3)
	}
	// Nothing of the cut bodies was created.
	var docs []map[string]any
	st.Must("GET", "/bo/documents", nil, 200).JSON(t, &docs)
	if len(docs) != 0 {
		t.Errorf("%d documents exist after bodies that never arrived whole", len(docs))
	}
}
