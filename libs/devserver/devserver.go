// Package devserver starts the real backing servers of the document library
// on loopback: FerretDB (a MongoDB-compatible server, run from the binary
// that tools/cmd/ferretdb builds), NATS with JetStream (embedded) and MinIO
// (a child process from the pinned build). Tests use it through testkit;
// `make dev` uses it through tools/cmd/devstack.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Process is a child process that is stopped with its parent.
type Process struct {
	Name string
	cmd  *exec.Cmd
	stop syscall.Signal
	done chan struct{}
	err  error
	once sync.Once
}

// Start runs bin with args and env added to the current environment. Its
// output goes to out (discarded when nil). The child is killed if this
// process dies.
func Start(name, bin string, args, env []string, out io.Writer) (*Process, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%s: binary %s is missing (run `make tools`): %w", name, bin, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	return StartCmd(name, cmd, syscall.SIGTERM)
}

// StartCmd starts a prepared command as a Process that Stop ends with
// stop (then SIGKILL after 10 s). The child is killed if this process dies.
// It runs in a process group of its own, so a Ctrl-C in the terminal
// reaches only this process, which stops its children in its own order
// (the database last, after the services' final writes).
func StartCmd(name string, cmd *exec.Cmd, stop syscall.Signal) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, stop: stop, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Pid is the child's process id (for benchmarks that sample its memory).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Err is the exit error, once Done is closed.
func (p *Process) Err() error { return p.err }

// Stop sends the stop signal (SIGTERM unless StartCmd said otherwise),
// waits up to 10 s, then kills. It is safe to call twice.
func (p *Process) Stop() {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(p.stop)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
}

// WaitHTTP polls url until p listens on its address and it answers 200,
// the process exits, or ctx ends.
func WaitHTTP(ctx context.Context, p *Process, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	return waitFor(ctx, p, u.Host, func() bool {
		resp, err := http.Get(rawURL)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// WaitTCP polls addr until p accepts connections there, the process
// exits, or ctx ends.
func WaitTCP(ctx context.Context, p *Process, addr string) error {
	return waitFor(ctx, p, addr, func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
}

// waitFor waits until p listens on addr and ok; another process that took
// addr answers ok too, so whose the socket is counts. When another process
// holds addr, p is stopped and the error is ErrAddrTaken. Where /proc
// cannot tell (another system, a host name), ok alone decides.
func waitFor(ctx context.Context, p *Process, addr string, ok func() bool) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		switch whoListens(p.Pid(), addr) {
		case started, unknown:
			if ok() {
				return nil
			}
		case another:
			p.Stop()
			return fmt.Errorf("%s: %w", p.Name, ErrAddrTaken)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become ready: %w", p.Name, ctx.Err())
		case <-p.Done():
			if CheckFree(addr) != nil {
				return fmt.Errorf("%s %w (%v): %w", p.Name, ErrExited, p.Err(), ErrAddrTaken)
			}
			return fmt.Errorf("%s %w: %v", p.Name, ErrExited, p.Err())
		case <-tick.C:
		}
	}
}

// handedOut holds the addresses FreeAddr returned: the kernel may hand the
// same free port out twice before the first taker binds it, and two
// servers of one test would then share an address (one fails to start,
// and its clients talk to the other).
var handedOut = struct {
	sync.Mutex
	addrs map[string]bool
}{addrs: map[string]bool{}}

// FreeAddr returns a loopback address with a port nobody listens on now,
// never one it returned before in this process.
func FreeAddr() (string, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := l.Addr().String()
		_ = l.Close()
		if !handedOut.addrs[addr] {
			handedOut.addrs[addr] = true
			return addr, nil
		}
	}
	return "", errors.New("no loopback port that was not handed out already")
}

// CheckFree returns an error naming addr when something already listens there.
func CheckFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s is already in use (stop what listens there, or choose another address)", addr)
	}
	return l.Close()
}

// BinDir is where the project's tool binaries live: $DOCLIB_BIN_DIR, or
// .bin at the root of the repository (the folder holding go.work) found from
// the working directory upwards.
func BinDir() (string, error) {
	if d := os.Getenv("DOCLIB_BIN_DIR"); d != "" {
		return d, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, ".bin"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work found above the working directory; set DOCLIB_BIN_DIR")
		}
		dir = parent
	}
}

// Port returns the port of a host:port address.
func Port(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}
