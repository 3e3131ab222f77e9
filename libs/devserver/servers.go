package devserver

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// FerretDB starts the ferretdb binary from binDir listening on addr, with
// its SQLite files under dir, and waits until it accepts connections. It
// returns the process and its MongoDB URI.
func FerretDB(ctx context.Context, binDir, addr, dir string, out io.Writer) (*Process, string, error) {
	p, err := Start("ferretdb", filepath.Join(binDir, "ferretdb"),
		[]string{"-listen-addr", addr, "-dir", dir}, nil, out)
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := WaitTCP(ctx, p, addr); err != nil {
		p.Stop()
		return nil, "", err
	}
	return p, "mongodb://" + addr + "/", nil
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
