// Package controlplane starts a Kubernetes control plane for tests on
// 127.0.0.1, from the binaries `make controlplane` builds into .bin/: etcd,
// kube-apiserver (PodSecurity admission on, RBAC, a static admin token),
// kube-controller-manager, kube-scheduler, and kwok, which plays one node and
// moves the pods placed on it through their phases without running a
// container.
package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Binaries are the programs Start runs, as `make controlplane` names them in .bin/.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// Cluster is a running control plane. Its processes stop when the test ends.
type Cluster struct {
	// Kubeconfig is the path of a kubeconfig with cluster-admin rights, for
	// helm and kubectl (KUBECONFIG=...).
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	// BinDir holds the binaries (and helm).
	BinDir string

	dir   string
	procs []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// BinDir is DOCLIB_BIN_DIR, or the .bin/ folder of the repository the test
// runs in (the folder that holds go.work).
func BinDir() (string, error) {
	if d := os.Getenv("DOCLIB_BIN_DIR"); d != "" {
		return d, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return filepath.Join(d, ".bin"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work above %s: set DOCLIB_BIN_DIR", wd)
		}
	}
}

// Start starts a control plane for t, or skips t when a binary is missing
// (fails instead when DOCLIB_REQUIRE_CONTROLPLANE is set, as `make test` does).
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin, err := BinDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range append(Binaries, "helm") {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			if os.Getenv("DOCLIB_REQUIRE_CONTROLPLANE") != "" {
				t.Fatalf("no %s in %s: `make controlplane` builds it", b, bin)
			}
			t.Skipf("no %s in %s (`make controlplane` builds it)", b, bin)
		}
	}
	c := &Cluster{BinDir: bin, dir: t.TempDir()}
	t.Cleanup(c.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.start(ctx); err != nil {
		c.dumpLogs(t)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs(t)
		}
	})
	return c
}

func (c *Cluster) start(ctx context.Context) error {
	etcdURL, err := c.startEtcd()
	if err != nil {
		return err
	}
	token, err := randomToken()
	if err != nil {
		return err
	}
	apiURL, err := c.startAPIServer(ctx, etcdURL, token)
	if err != nil {
		return err
	}
	if err := c.writeKubeconfig(apiURL, token); err != nil {
		return err
	}
	if err := c.startControllers(); err != nil {
		return err
	}
	return c.startKwok(ctx)
}

func (c *Cluster) startEtcd() (string, error) {
	client, peer, err := freePort(), freePort(), error(nil)
	clientURL := "http://127.0.0.1:" + strconv.Itoa(client)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peer)
	err = c.run("etcd",
		"--name=test", "--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	return clientURL, err
}

func (c *Cluster) startAPIServer(ctx context.Context, etcdURL, token string) (string, error) {
	saKey := filepath.Join(c.dir, "sa.key")
	if err := writeECKey(saKey); err != nil {
		return "", err
	}
	tokens := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return "", err
	}
	port := freePort()
	err := c.run("kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		"--cert-dir="+filepath.Join(c.dir, "apiserver-certs"),
		"--token-auth-file="+tokens, "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.96.0.0/16",
		// The kubernetes Service's endpoint may not be a loopback address.
		"--endpoint-reconciler-type=none",
		// PodSecurity is on by default; the release's namespace says
		// which level it enforces (pod-security.kubernetes.io/enforce).
		"--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,PodSecurity,ResourceQuota,LimitRanger",
		"--v=0")
	if err != nil {
		return "", err
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	cfg := &rest.Config{Host: url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	err = c.poll(ctx, "the API server to be ready", func() (bool, error) {
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
	return url, err
}

func (c *Cluster) writeKubeconfig(url, token string) error {
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, insecure-skip-tls-verify: true}
users:
- name: admin
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: admin}
current-context: test
`, url, token)
	if err := os.WriteFile(c.Kubeconfig, []byte(kc), 0o600); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = 100, 200
	c.Config = cfg
	c.Client, err = kubernetes.NewForConfig(cfg)
	return err
}

func (c *Cluster) startControllers() error {
	err := c.run("kube-controller-manager",
		"--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--service-account-private-key-file="+filepath.Join(c.dir, "sa.key"),
		"--use-service-account-credentials=false",
		"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10")
	if err != nil {
		return err
	}
	return c.run("kube-scheduler", "--kubeconfig="+c.Kubeconfig, "--leader-elect=false", "--secure-port=0")
}

// run starts one binary of BinDir, its output in a log file; it dies with
// the test process (Pdeathsig), so a test killed by its timeout leaves none.
func (c *Cluster) run(name string, args ...string) error {
	log := filepath.Join(c.dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.BinDir, name), args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	c.procs = append(c.procs, p)
	return nil
}

// stop ends the processes, the last started first.
func (c *Cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	c.procs = nil
}

// dumpLogs logs the last lines of each process's output, and which exited.
func (c *Cluster) dumpLogs(t testing.TB) {
	for _, p := range c.procs {
		select {
		case <-p.done:
			t.Logf("%s exited: %v", p.name, p.cmd.ProcessState)
		default:
		}
		b, _ := os.ReadFile(p.log)
		t.Logf("--- last lines of %s:\n%s", p.name, lastLines(b, 25))
	}
}

func lastLines(b []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Exited names a process of the control plane that has stopped, if any.
func (c *Cluster) Exited() string {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return p.name
		default:
		}
	}
	return ""
}

// poll calls ok until it is true, ctx ends or a process has exited.
func (c *Cluster) poll(ctx context.Context, what string, ok func() (bool, error)) error {
	var lastErr error
	for {
		if p := c.Exited(); p != "" {
			return fmt.Errorf("waiting for %s: %s exited", what, p)
		}
		done, err := ok()
		if done {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, ctx.Err(), lastErr)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// writeECKey writes a new P-256 key: the API server signs and checks
// service account tokens with it.
func writeECKey(path string) error {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}
