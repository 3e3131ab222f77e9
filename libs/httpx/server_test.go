package httpx

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/devserver"
)

func TestServeListeners(t *testing.T) {
	t.Parallel()
	a, err := devserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	b, err := devserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	say := func(s string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) })
	}
	cfg := ServerConfig{ReadHeaderTimeout: time.Second, ShutdownTimeout: time.Second}
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeListeners(ctx, log, cfg, nil, Listener{Name: "one", Addr: a, Handler: say("one")}, Listener{Name: "two", Addr: b, Handler: say("two")})
	}()
	get := func(addr string) string {
		t.Helper()
		var res *http.Response
		var err error
		for range 100 {
			if res, err = http.Get("http://" + addr); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}
	if got := get(a); got != "one" {
		t.Errorf("first listener answered %q", got)
	}
	if got := get(b); got != "two" {
		t.Errorf("second listener answered %q", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("after shutdown: %v", err)
	}
	for _, addr := range []string{a, b} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after shutdown", addr)
		}
	}
}

func TestServeListenersPortInUse(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	free, err := devserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	err = ServeListeners(context.Background(), slog.New(slog.DiscardHandler), ServerConfig{}, nil,
		Listener{Addr: free, Handler: http.NotFoundHandler()}, Listener{Addr: busy.Addr().String(), Handler: http.NotFoundHandler()})
	if err == nil || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("error %v, want one naming the busy address", err)
	}
	// The first address was released again.
	ln, err := net.Listen("tcp", free)
	if err != nil {
		t.Errorf("the other address is still held: %v", err)
	} else {
		ln.Close()
	}
}
