// Command ferretdb runs the development and test database of the document
// library: FerretDB v1 (a MongoDB wire-protocol server), on PostgreSQL when
// the machine has its server binaries and on SQLite otherwise, behind a
// write gate (tools/internal/wiregate) that makes every write atomic
// against every other, as on MongoDB, and answers as the primary of a
// one-member replica set, with transactions and retryable writes. Clients
// connect to -listen-addr, the gate; FerretDB itself listens only on a
// private Unix socket.
//
// It is a separate binary so test binaries built with -race carry neither
// FerretDB nor SQLite. Once it serves, it prints one line to stdout:
//
//	doclib-devdb ready backend=<postgresql|sqlite> gate=<on|off> reason=<why this backend>
//
// which devserver waits for and `make dev` shows.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"

	"github.com/doclib/tools/internal/pgcluster"
	"github.com/doclib/tools/internal/wiregate"
)

func main() {
	addr := flag.String("listen-addr", "127.0.0.1:27017", "TCP address clients connect to (the write gate)")
	dir := flag.String("dir", ".data/ferretdb", "data directory: SQLite files here, the PostgreSQL cluster in <dir>/postgres")
	backend := flag.String("backend", envOr("DEV_DATABASE_BACKEND", "auto"), "auto (PostgreSQL when found, else SQLite), postgresql or sqlite; env DEV_DATABASE_BACKEND")
	gate := flag.String("gate", envOr("DEV_DATABASE_GATE", "on"), "on, or off to let writes race as on bare FerretDB (only to show what the gate prevents); env DEV_DATABASE_GATE")
	lifetime := flag.Duration("transaction-lifetime", envDuration("DEV_DATABASE_TRANSACTION_LIFETIME", wiregate.DefaultLifetime), "a transaction still open after this is aborted (MongoDB's transactionLifetimeLimitSeconds); env DEV_DATABASE_TRANSACTION_LIFETIME")
	ttlInterval := flag.Duration("ttl-interval", envDuration("DEV_DATABASE_TTL_INTERVAL", wiregate.DefaultTTLInterval), "how often documents expired by a TTL index are deleted (MongoDB's TTL monitor: 60s); env DEV_DATABASE_TTL_INTERVAL")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dir, *backend, *gate, *lifetime, *ttlInterval); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// envDuration reads a duration from the environment; one that does not
// parse is reported and exits.
func envDuration(k string, def time.Duration) time.Duration {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		fmt.Fprintf(os.Stderr, "ferretdb: %s=%q is not a positive duration (such as 60s)\n", k, v)
		os.Exit(2)
	}
	return d
}

func run(ctx context.Context, addr, dir, backend, gateMode string, lifetime, ttlInterval time.Duration) error {
	if gateMode != "on" && gateMode != "off" {
		return fmt.Errorf("-gate must be on or off, not %q", gateMode)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))

	cfg := &ferretdb.Config{
		// Warn logs every error reply (each 404 lookup, each duplicate key).
		Logger: log,
	}
	reason, pg, err := chooseBackend(ctx, cfg, dir, backend)
	if err != nil {
		return err
	}
	var pgDone <-chan struct{} // nil, never ready, on SQLite
	if pg != nil {
		defer pg.Stop()
		pgDone = pg.Done()
	}

	// The private socket: only the gate connects to FerretDB.
	sockDir, err := os.MkdirTemp("", "doclib-devdb-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sockDir)
	sock := filepath.Join(sockDir, "ferretdb.sock")
	cfg.Listener = ferretdb.ListenerConfig{Unix: sock}
	f, err := ferretdb.New(cfg)
	if err != nil {
		return err
	}
	fctx, cancelFerret := context.WithCancel(context.Background())
	ferretDone := make(chan struct{})
	go func() {
		defer close(ferretDone)
		_ = f.Run(fctx)
	}()
	defer func() {
		cancelFerret()
		<-ferretDone
	}()
	if err := waitUnix(ctx, sock); err != nil {
		return err
	}

	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	g := &wiregate.Gate{
		Dial: func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		},
		Off: gateMode == "off",
		// Its own warnings (a read that gave up waiting for a transaction,
		// an abort that could not be undone) are worth seeing.
		Log:         slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Lifetime:    lifetime,
		TTLInterval: ttlInterval,
	}
	fmt.Printf("doclib-devdb ready backend=%s gate=%s reason=%s\n", cfg.Handler, gateMode, reason)

	served := make(chan error, 1)
	go func() { served <- g.Serve(ctx, l) }()
	select {
	case err := <-served:
		return err
	case <-pgDone:
		return errors.New("postgres exited (see postgres.log in the data directory)")
	}
}

// chooseBackend sets cfg's handler, starting PostgreSQL when it is to be
// used (returned, to be stopped), and says why it chose it.
func chooseBackend(ctx context.Context, cfg *ferretdb.Config, dir, backend string) (string, *pgcluster.Cluster, error) {
	sqlite := func() {
		cfg.Handler = "sqlite"
		cfg.SQLiteURL = "file:" + dir + "/"
	}
	switch backend {
	case "sqlite":
		sqlite()
		return "asked for (DEV_DATABASE_BACKEND=sqlite)", nil, nil
	case "auto", "postgresql":
	default:
		return "", nil, fmt.Errorf("-backend must be auto, postgresql or sqlite, not %q", backend)
	}
	pg, err := startPostgres(ctx, dir)
	if err != nil {
		if backend == "postgresql" {
			return "", nil, err
		}
		sqlite()
		return "PostgreSQL not usable: " + err.Error(), nil, nil
	}
	cfg.Handler = "postgresql"
	cfg.PostgreSQLURL = pg.URL
	return fmt.Sprintf("PostgreSQL %s found, cluster in %s", pg.Version, filepath.Join(dir, "postgres")), pg, nil
}

func startPostgres(ctx context.Context, dir string) (*pgcluster.Cluster, error) {
	bin, err := pgcluster.Find()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// The server runs as "postgres", which must be able to enter dir
		// (a test's temporary directory is 0700).
		st, err := os.Stat(dir)
		if err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, st.Mode().Perm()|0o011); err != nil {
			return nil, err
		}
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	return pgcluster.Start(ctx, bin, filepath.Join(dir, "postgres"), logFile)
}

// waitUnix waits until FerretDB accepts connections on its socket.
func waitUnix(ctx context.Context, sock string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ferretdb did not listen on %s: %w", sock, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
