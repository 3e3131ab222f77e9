package httpx

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
)

// Check reports whether one dependency is reachable.
type Check func(ctx context.Context) error

// Health serves /healthz (the process is alive) and /readyz.
//
// Readiness means "this process can serve its routes": it fails only when a
// required check fails (a service's own database) or the server is
// draining. A dependency that only some routes need (NATS for publishing,
// the object store for file bytes) is reported but never fails readiness:
// its outage makes those routes answer 503, and taking every replica out of
// its Service for it would turn a partial outage into a total one.
type Health struct {
	required map[string]Check
	reported map[string]Check
	timeout  time.Duration
	draining atomic.Bool
}

// NewHealth returns a Health whose /readyz needs every check in required
// to pass.
func NewHealth(required map[string]Check) *Health {
	return &Health{required: required, timeout: 2 * time.Second}
}

// Report adds checks that /readyz shows (status "degraded" when one fails)
// without failing on them.
func (h *Health) Report(checks map[string]Check) *Health {
	if h.reported == nil {
		h.reported = map[string]Check{}
	}
	for name, c := range checks {
		h.reported[name] = c
	}
	return h
}

// Drain makes /readyz fail from now on, so load balancers stop sending
// traffic before the server shuts down.
func (h *Health) Drain() { h.draining.Store(true) }

// Register adds the two routes to r, for GET and HEAD.
func (h *Health) Register(r gin.IRoutes) {
	GET(r, "/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "alive"}) })
	GET(r, "/readyz", h.ready)
}

func (h *Health) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.timeout)
	defer cancel()
	results := make(map[string]string, len(h.required)+len(h.reported))
	var mu sync.Mutex
	var wg sync.WaitGroup
	var failed, degraded bool
	run := func(checks map[string]Check, required bool) {
		for name, check := range checks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status := "ok"
				if err := check(ctx); err != nil {
					status = err.Error()
				}
				mu.Lock()
				defer mu.Unlock()
				results[name] = status
				if status != "ok" {
					if required {
						failed = true
					} else {
						degraded = true
					}
				}
			}()
		}
	}
	run(h.required, true)
	run(h.reported, false)
	wg.Wait()
	body := gin.H{"status": "ready", "checks": results}
	code := http.StatusOK
	switch {
	case h.draining.Load():
		code, body["status"] = http.StatusServiceUnavailable, "draining"
	case failed:
		code, body["status"] = http.StatusServiceUnavailable, "unready"
	case degraded:
		body["status"] = "degraded"
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(code, body)
}
