package httpx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/doclib/libs/config"
)

// ServerConfig is how a service listens and how long it waits.
type ServerConfig struct {
	Addr              string
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration // whole request, body included
	WriteTimeout      time.Duration // whole response
	IdleTimeout       time.Duration
	ShutdownTimeout   time.Duration // for in-flight requests to finish
	DrainDelay        time.Duration // /readyz fails this long before the listener closes
}

// LoadServerConfig reads HTTP_ADDR, HTTP_READ_TIMEOUT, HTTP_WRITE_TIMEOUT,
// HTTP_IDLE_TIMEOUT, SHUTDOWN_TIMEOUT and SHUTDOWN_DRAIN_DELAY, with the
// service's own defaults.
func LoadServerConfig(env *config.Env, def ServerConfig) ServerConfig {
	c := def
	c.Addr = env.String("HTTP_ADDR", def.Addr)
	c.ReadHeaderTimeout = 10 * time.Second
	c.ReadTimeout = env.Duration("HTTP_READ_TIMEOUT", def.ReadTimeout)
	c.WriteTimeout = env.Duration("HTTP_WRITE_TIMEOUT", def.WriteTimeout)
	c.IdleTimeout = env.Duration("HTTP_IDLE_TIMEOUT", orDefault(def.IdleTimeout, 120*time.Second))
	c.ShutdownTimeout = env.Duration("SHUTDOWN_TIMEOUT", orDefault(def.ShutdownTimeout, 20*time.Second))
	c.DrainDelay = env.Duration("SHUTDOWN_DRAIN_DELAY", def.DrainDelay)
	return c
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Serve listens on cfg.Addr and serves h until ctx is done, then drains:
// health fails first (after DrainDelay the listener closes), in-flight
// requests get ShutdownTimeout to finish. A port already in use is an error
// at once.
func Serve(ctx context.Context, log *slog.Logger, cfg ServerConfig, h http.Handler, health *Health) error {
	return ServeListeners(ctx, log, cfg, health, Listener{Addr: cfg.Addr, Handler: h})
}

// Listener is one address and what it serves.
type Listener struct {
	Name    string // for the logs; "" when a process has one listener
	Addr    string
	Handler http.Handler
}

// ServeListeners serves every listener with cfg's timeouts until ctx is
// done, then drains them together as Serve does. Every address is bound
// before any is served, so a port in use fails start-up at once; if one
// server fails, the others are shut down too.
func ServeListeners(ctx context.Context, log *slog.Logger, cfg ServerConfig, health *Health, listeners ...Listener) error {
	lns := make([]net.Listener, 0, len(listeners))
	defer func() {
		for _, ln := range lns {
			_ = ln.Close() // already closed by Shutdown on the normal path
		}
	}()
	for _, l := range listeners {
		ln, err := net.Listen("tcp", l.Addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", l.Addr, err)
		}
		lns = append(lns, ln)
	}
	servers := make([]*http.Server, len(listeners))
	errc := make(chan error, len(listeners))
	for i, l := range listeners {
		srvLog := log
		if l.Name != "" {
			srvLog = log.With("listener", l.Name)
		}
		servers[i] = newServer(ctx, srvLog, cfg, l.Handler)
		go func() { errc <- servers[i].Serve(lns[i]) }()
		attrs := []any{"addr", lns[i].Addr().String()}
		if l.Name != "" {
			attrs = append(attrs, "listener", l.Name)
		}
		log.Info("listening", attrs...)
	}

	var failed error
	select {
	case err := <-errc:
		failed = fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		log.Info("shutting down", "drain_delay", cfg.DrainDelay.String())
		if health != nil {
			health.Drain()
		}
		time.Sleep(cfg.DrainDelay)
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	errs := []error{failed}
	for _, srv := range servers {
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
	}
	remaining := len(servers)
	if failed != nil {
		remaining--
	}
	for range remaining {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func newServer(ctx context.Context, log *slog.Logger, cfg ServerConfig, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
}
