// Package testkit starts real backing servers for tests: one FerretDB and
// one MinIO per test binary, shared by its tests, each test with a fresh
// database or bucket of its own; a fresh NATS server per test; and a MinIO
// of a test's own for outage tests. Use Main from TestMain so the shared
// servers stop with the tests.
package testkit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/mongox"
)

type shared struct {
	once sync.Once
	proc *devserver.Process
	dir  string
	err  error
}

var (
	ferret shared
	ferDB  devserver.Database

	minio    shared
	minioCfg devserver.MinIOCredentials
)

// Main runs the tests of a package, then after (a deferred call would not
// run: Main exits), and stops the shared servers.
func Main(m *testing.M, after ...func()) {
	code := m.Run()
	for _, f := range after {
		f()
	}
	for _, s := range []*shared{&ferret, &minio} {
		if s.proc != nil {
			s.proc.Stop()
		}
		if s.dir != "" {
			_ = os.RemoveAll(s.dir)
		}
	}
	os.Exit(code)
}

func (s *shared) start(name string, run func(dir string) (*devserver.Process, error)) error {
	s.once.Do(func() {
		s.dir, s.err = os.MkdirTemp("", "doclib-"+name+"-")
		// Another test binary may take a port FreeAddr gave before the
		// server binds it: start again on new ports.
		for try := 1; s.err == nil; try++ {
			if s.proc, s.err = run(s.dir); try == 3 || !errors.Is(s.err, devserver.ErrAddrTaken) {
				break
			}
			s.err = nil
		}
	})
	return s.err
}

// MongoURI returns the URI of this test binary's development database,
// starting it the first time: FerretDB behind the write gate that makes
// its writes atomic as MongoDB's and answers as a one-member replica set
// with transactions (docs/development-database.md), on PostgreSQL where
// the machine has it (SQLite otherwise, or with DEV_DATABASE_BACKEND=sqlite).
// Set TEST_MONGODB_URI to use another server: a real MongoDB replica set
// (a standalone runs no transactions).
func MongoURI(t testing.TB) string {
	t.Helper()
	if uri := os.Getenv("TEST_MONGODB_URI"); uri != "" {
		return uri
	}
	return DevDatabase(t).URI
}

// DevDatabase starts (the first time) and describes this test binary's
// development database; it ignores TEST_MONGODB_URI.
func DevDatabase(t testing.TB) devserver.Database {
	t.Helper()
	err := ferret.start("ferretdb", func(dir string) (*devserver.Process, error) {
		bin, err := devserver.BinDir()
		if err != nil {
			return nil, err
		}
		addr, err := devserver.FreeAddr()
		if err != nil {
			return nil, err
		}
		p, db, err := devserver.FerretDB(context.Background(), bin, addr, dir, serverOutput())
		ferDB = db
		return p, err
	})
	if err != nil {
		t.Fatalf("testkit: start FerretDB: %v", err)
	}
	return ferDB
}

// Mongo returns a fresh, empty database on the shared server, dropped when
// the test ends.
func Mongo(t testing.TB) *mongo.Database {
	t.Helper()
	uri := MongoURI(t)
	c, err := mongox.Connect(uri)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	db := c.Database(UniqueName(t))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = db.Drop(ctx)
		_ = c.Disconnect(ctx)
	})
	return db
}

// UniqueName returns a short name for t's resources (databases, buckets,
// streams): lower-case letters and digits, unique per call.
func UniqueName(t testing.TB) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, t.Name())
	if len(base) > 30 {
		base = base[len(base)-30:]
	}
	return "t" + base + hex.EncodeToString(b[:])
}

// NATS starts a fresh NATS server with JetStream for t and returns it; it
// stops when the test ends. Tests may Shutdown it and start another on the
// same address with NATSAt to simulate an outage.
func NATS(t testing.TB) *server.Server {
	t.Helper()
	addr, err := devserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return NATSAt(t, addr, t.TempDir())
}

// NATSAt starts a NATS server on addr with its store in dir.
func NATSAt(t testing.TB, addr, dir string) *server.Server {
	t.Helper()
	s, err := devserver.NATS(addr, dir)
	if err != nil {
		t.Fatalf("testkit: %v", err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// MinIO returns the endpoint and credentials of this test binary's MinIO,
// starting it the first time (from the pinned build in .bin).
func MinIO(t testing.TB) devserver.MinIOCredentials {
	t.Helper()
	err := minio.start("minio", func(dir string) (*devserver.Process, error) {
		bin, err := devserver.BinDir()
		if err != nil {
			return nil, err
		}
		addr, err := devserver.FreeAddr()
		if err != nil {
			return nil, err
		}
		console, err := devserver.FreeAddr()
		if err != nil {
			return nil, err
		}
		minioCfg = devserver.MinIOCredentials{Endpoint: addr, AccessKey: "testkit", SecretKey: "testkit-secret"}
		return devserver.MinIO(context.Background(), bin, addr, console, dir, minioCfg, serverOutput())
	})
	if err != nil {
		t.Fatalf("testkit: start MinIO: %v", err)
	}
	return minioCfg
}

// MinIOServer is a MinIO of one test's own, for tests that stop and start
// it (an outage) without disturbing the shared one.
type MinIOServer struct {
	t        testing.TB
	Creds    devserver.MinIOCredentials
	console  string
	dir, bin string
	mu       sync.Mutex // guards proc: a test may Stop from a goroutine of its own, and the cleanup Stops again
	proc     *devserver.Process
}

// OwnMinIO starts a MinIO for t alone, stopped when t ends.
func OwnMinIO(t testing.TB) *MinIOServer {
	t.Helper()
	bin, err := devserver.BinDir()
	Must(t, err, "testkit: MinIO binary")
	addr, err := devserver.FreeAddr()
	Must(t, err, "testkit: free address")
	console, err := devserver.FreeAddr()
	Must(t, err, "testkit: free address")
	m := &MinIOServer{t: t, console: console, dir: t.TempDir(), bin: bin,
		Creds: devserver.MinIOCredentials{Endpoint: addr, AccessKey: "testkit", SecretKey: "testkit-secret"}}
	m.Start()
	t.Cleanup(m.Stop)
	return m
}

// Start starts the server (again), on the same address and data.
func (m *MinIOServer) Start() {
	m.t.Helper()
	p, err := devserver.MinIO(context.Background(), m.bin, m.Creds.Endpoint, m.console, m.dir, m.Creds, serverOutput())
	Must(m.t, err, "testkit: start MinIO")
	m.mu.Lock()
	m.proc = p
	m.mu.Unlock()
}

// MultipartParts counts the parts of unfinished multipart uploads in the
// server's data directory (MinIO does not always list such uploads).
func (m *MinIOServer) MultipartParts() int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(m.dir, ".minio.sys", "multipart"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), "part.") {
			n++
		}
		return nil
	})
	return n
}

// Stop stops the server; a second Stop does nothing.
func (m *MinIOServer) Stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		m.proc.Stop()
		m.proc = nil
	}
}

// Kill kills the server at once (SIGKILL: no shutdown, requests in
// flight cut), as a crash or an OOM kill would; Start brings it back on the
// same address and data.
func (m *MinIOServer) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil {
		_ = syscall.Kill(m.proc.Pid(), syscall.SIGKILL)
		m.proc.Stop() // reaps it: the signal it sends finds the process gone
		m.proc = nil
	}
}

// serverOutput is where shared servers log: nowhere, unless
// TESTKIT_VERBOSE is set.
func serverOutput() io.Writer {
	if os.Getenv("TESTKIT_VERBOSE") != "" {
		return os.Stderr
	}
	return nil
}

// Logger is a logger for the code under test: debug lines into the test's
// output with -v or EVENTS_TEST_LOG set, discarded otherwise.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() || os.Getenv("EVENTS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Must fails t on err; for set-up steps.
func Must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// NeedsTransactions skips t when the server refuses multi-document
// transactions. Only until the development database's gate accepts them:
// then every test runs.
func NeedsTransactions(t testing.TB, db *mongo.Database) {
	t.Helper()
	err := mongox.InTx(context.Background(), db.Client(), func(ctx context.Context) error {
		_, err := db.Collection("txprobe").InsertOne(ctx, map[string]any{})
		return err
	})
	if err != nil {
		t.Skipf("the database refuses transactions: %v", err)
	}
}
