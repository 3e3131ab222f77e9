package process

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/doclib/libs/config"
	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Against real FerretDB and NATS: the process opens both, reports them in
// its readiness, and Close releases them (NATS drained).
func TestStartOpenNATSHealthClose(t *testing.T) {
	ctx := context.Background()
	env := config.FromMap(map[string]string{"MONGODB_URI": testkit.MongoURI(t)})
	p, err := Start(ctx, "test", env, "error", testkit.MongoURI(t))
	testkit.Must(t, err, "start")
	testkit.Must(t, p.OpenNATS(ctx, testkit.NATS(t).ClientURL()), "open NATS")

	code, body := readyz(t, p.Health(map[string]httpx.Check{"extra": func(context.Context) error { return nil }}))
	for _, name := range []string{"mongodb", "nats", "extra"} {
		if code != http.StatusOK || !strings.Contains(body, name) {
			t.Errorf("readyz: %d %s; want 200 naming %s", code, body, name)
		}
	}

	nc := p.NATS
	p.Close()
	if !nc.IsClosed() && !nc.IsDraining() {
		t.Error("NATS connection still open after Close")
	}
	p.Close() // a second Close does nothing
}

// A service starts while NATS is down: it is ready (MongoDB answers), says
// NATS is not connected, and once NATS is up the streams are made and what
// waits for NATS starts.
func TestStartsWhileNATSIsDown(t *testing.T) {
	ctx := context.Background()
	env := config.FromMap(map[string]string{"MONGODB_URI": testkit.MongoURI(t)})
	p, err := Start(ctx, "test", env, "error", testkit.MongoURI(t))
	testkit.Must(t, err, "start")
	defer p.Close()
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free address")

	start := time.Now()
	testkit.Must(t, p.OpenNATS(ctx, "nats://"+addr), "open NATS")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("OpenNATS took %s with NATS down; want it to return at once", d)
	}
	var started, stopped atomic.Bool
	stop := p.WhenNATS("test consumers", func(ctx context.Context) (func(context.Context) error, error) {
		if _, err := p.JS.Stream(ctx, "LIBRARY"); err != nil {
			t.Errorf("started before the stream exists: %v", err)
		}
		started.Store(true)
		return func(context.Context) error { stopped.Store(true); return nil }, nil
	})

	code, body := readyz(t, p.Health(nil))
	var r struct {
		Status string            `json:"status"`
		Checks map[string]string `json:"checks"`
	}
	testkit.Must(t, json.Unmarshal([]byte(body), &r), "readyz body")
	if code != http.StatusOK || r.Status != "degraded" || r.Checks["mongodb"] != "ok" || r.Checks["nats"] == "ok" {
		t.Errorf("readyz with NATS down: %d %s; want 200, degraded, nats not ok", code, body)
	}
	if started.Load() {
		t.Fatal("WhenNATS ran before NATS was up")
	}

	testkit.NATSAt(t, addr, t.TempDir())
	deadline := time.Now().Add(30 * time.Second)
	for !started.Load() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !started.Load() {
		t.Fatal("WhenNATS did not run within 30 s of NATS starting")
	}
	if code, body := readyz(t, p.Health(nil)); code != http.StatusOK || !strings.Contains(body, `"status":"ready"`) {
		t.Errorf("readyz with NATS up: %d %s; want 200 ready", code, body)
	}
	testkit.Must(t, stop(ctx), "stop")
	if !stopped.Load() {
		t.Error("stop did not stop what WhenNATS started")
	}
}

// WhenNATS stopped before NATS ever came: nothing starts, stop returns.
func TestWhenNATSStoppedBeforeNATS(t *testing.T) {
	ctx := context.Background()
	env := config.FromMap(map[string]string{"MONGODB_URI": testkit.MongoURI(t)})
	p, err := Start(ctx, "test", env, "error", testkit.MongoURI(t))
	testkit.Must(t, err, "start")
	addr, err := devserver.FreeAddr()
	testkit.Must(t, err, "free address")
	testkit.Must(t, p.OpenNATS(ctx, "nats://"+addr), "open NATS")
	stop := p.WhenNATS("never", func(context.Context) (func(context.Context) error, error) {
		t.Error("started without NATS")
		return nil, nil
	})
	testkit.Must(t, stop(ctx), "stop")
	p.Close()
}

func readyz(t *testing.T, h *httpx.Health) (int, string) {
	t.Helper()
	e := gin.New()
	h.Register(e)
	w := httptest.NewRecorder()
	e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return w.Code, w.Body.String()
}
