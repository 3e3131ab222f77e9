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

// Health serves /healthz (the process is alive) and /readyz (every named
// dependency answered within the timeout, and the server is not draining).
type Health struct {
	checks   map[string]Check
	timeout  time.Duration
	draining atomic.Bool
}

// NewHealth returns a Health with the given readiness checks.
func NewHealth(checks map[string]Check) *Health {
	return &Health{checks: checks, timeout: 2 * time.Second}
}

// Drain makes /readyz fail from now on, so load balancers stop sending
// traffic before the server shuts down.
func (h *Health) Drain() { h.draining.Store(true) }

// Register adds the two routes to r.
func (h *Health) Register(r gin.IRoutes) {
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "alive"}) })
	r.GET("/readyz", h.ready)
}

func (h *Health) ready(c *gin.Context) {
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.timeout)
	defer cancel()
	results := make(map[string]string, len(h.checks))
	var mu sync.Mutex
	var wg sync.WaitGroup
	ok := !h.draining.Load()
	for name, check := range h.checks {
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
				ok = false
			}
		}()
	}
	wg.Wait()
	body := gin.H{"status": "ready", "checks": results}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
		body["status"] = "unready"
		if h.draining.Load() {
			body["status"] = "draining"
		}
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(code, body)
}
