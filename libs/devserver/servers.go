package devserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Database is the development database FerretDB started: where clients
// connect, the backend under FerretDB and why it was chosen, and whether
// the write gate is on.
type Database struct {
	URI     string
	Backend string // "postgresql" or "sqlite"
	Gate    string // "on" or "off"
	Reason  string
}

// readyPrefix starts the line the ferretdb binary prints once it serves.
const readyPrefix = "doclib-devdb ready "

// FerretDB starts the ferretdb binary from binDir (tools/cmd/ferretdb: the
// write gate on addr, FerretDB behind it on PostgreSQL or SQLite, with its
// data under dir) and waits until it serves. Its output goes to out.
// DEV_DATABASE_BACKEND and DEV_DATABASE_GATE in the environment reach it.
func FerretDB(ctx context.Context, binDir, addr, dir string, out io.Writer) (*Process, Database, error) {
	w := &readyWatcher{out: out, ready: make(chan string, 1)}
	p, err := Start("ferretdb", filepath.Join(binDir, "ferretdb"),
		[]string{"-listen-addr", addr, "-dir", dir}, nil, w)
	if err != nil {
		return nil, Database{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	select {
	case line := <-w.ready:
		db := parseReady(line)
		db.URI = "mongodb://" + addr + "/"
		return p, db, nil
	case <-p.Done():
		if CheckFree(addr) != nil {
			return nil, Database{}, fmt.Errorf("ferretdb exited before it was ready (%v): %w", p.Err(), ErrAddrTaken)
		}
		return nil, Database{}, fmt.Errorf("ferretdb exited before it was ready: %v (see its output)", p.Err())
	case <-ctx.Done():
		p.Stop()
		return nil, Database{}, fmt.Errorf("ferretdb did not become ready: %w", ctx.Err())
	}
}

// parseReady reads "backend=x gate=y reason=free text" after readyPrefix.
func parseReady(line string) Database {
	var db Database
	rest := strings.TrimPrefix(line, readyPrefix)
	if i := strings.Index(rest, "reason="); i >= 0 {
		db.Reason = strings.TrimSpace(rest[i+len("reason="):])
		rest = rest[:i]
	}
	for _, f := range strings.Fields(rest) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "backend":
			db.Backend = v
		case "gate":
			db.Gate = v
		}
	}
	return db
}

// readyWatcher passes a child's output on to out and sends the ready line
// once it sees it.
type readyWatcher struct {
	out   io.Writer
	ready chan string
	buf   []byte
	seen  bool
	mu    sync.Mutex
}

func (w *readyWatcher) Write(b []byte) (int, error) {
	w.mu.Lock()
	if !w.seen {
		w.buf = append(w.buf, b...)
		for {
			i := bytes.IndexByte(w.buf, '\n')
			if i < 0 {
				break
			}
			line := string(w.buf[:i])
			w.buf = w.buf[i+1:]
			if strings.HasPrefix(line, readyPrefix) {
				w.seen, w.buf = true, nil
				w.ready <- line
				break
			}
		}
		if len(w.buf) > 64<<10 { // no line ever comes: stop keeping it
			w.buf = w.buf[len(w.buf)-1024:]
		}
	}
	w.mu.Unlock()
	if w.out == nil {
		return len(b), nil
	}
	return w.out.Write(b)
}

// MinIOCredentials are the root credentials of a MinIO started here.
type MinIOCredentials struct {
	Endpoint, AccessKey, SecretKey string
}

// MinIO starts the minio binary from binDir serving dir on addr (its console
// on consoleAddr) and waits until it is live.
func MinIO(ctx context.Context, binDir, addr, consoleAddr, dir string, cred MinIOCredentials, out io.Writer) (*Process, error) {
	p, err := Start("minio", filepath.Join(binDir, "minio"),
		[]string{"server", "--quiet", "--address", addr, "--console-address", consoleAddr, dir},
		[]string{"MINIO_ROOT_USER=" + cred.AccessKey, "MINIO_ROOT_PASSWORD=" + cred.SecretKey,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1"}, out)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := WaitHTTP(ctx, p, "http://"+addr+"/minio/health/live"); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// NATS starts an embedded NATS server with JetStream on addr, storing
// streams under dir. Stop it with Shutdown and WaitForShutdown.
func NATS(addr, dir string) (*server.Server, error) {
	host, port := "127.0.0.1", Port(addr)
	s, err := server.NewServer(&server.Options{
		Host: host, Port: port, JetStream: true, StoreDir: dir,
		NoSigs: true, NoLog: true, ServerName: "doclib-dev",
	})
	if err != nil {
		return nil, fmt.Errorf("nats: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("nats did not start on %s (is the port in use?)", addr)
	}
	return s, nil
}
