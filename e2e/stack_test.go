// Package e2e drives the real services end to end: each test starts its own
// stack of service processes (built from this checkout) behind the real
// gateway, on real FerretDB, NATS and MinIO, and talks HTTP to the gateway
// as a client would.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/doclib/libs/devserver"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/testkit"
)

// The back-office tokens every test stack accepts, and the names and roles
// they stand for.
const (
	Token       = "e2e-token" // TokenName, editor
	TokenName   = "e2e"
	ViewerToken = "e2e-viewer-token" // ViewerName, viewer
	ViewerName  = "e2e-viewer"
)

// ModeratorEmail is the stack's public settings' address until a PUT.
const ModeratorEmail = "moderation@example.org"

// BackOfficeOrigin is the origin a browser back-office may call the
// stack's admin listener from.
const BackOfficeOrigin = "http://localhost:5173"

// IdentityKey is the key the stack's gateway signs callers with and its
// services verify.
const IdentityKey = "e2e-identity-key-0123456789abcdef012345"

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "doclib-e2e-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	// Not deferred: Main exits. Each run left ~300 MB of binaries in /tmp,
	// and a disk filled by them failed a make test with "no space left".
	testkit.Main(m, func() { os.RemoveAll(dir) })
}

// buildServices builds the service binaries once per test binary.
func buildServices(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			binErr = err
			return
		}
		for _, s := range []string{"taxonomy", "catalog", "media", "webhook", "console", "gateway"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, s), "./services/"+s+"/cmd/"+s)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = fmt.Errorf("build %s: %v\n%s", s, err, out)
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

// Stack is one running system.
type Stack struct {
	t        testing.TB
	URL      string // the gateway's public listener
	AdminURL string // the gateway's admin listener (/bo and everything public)
	addrs    map[string]string
	env      map[string][]string
	procs    map[string]*devserver.Process
	natsSrv  *server.Server
	natsAt   string
	natsDir  string
	logs     *testkit.Buffer
	logDir   string // when set, each service's output goes to a file there
	// Check validates every answer Req gets against the OpenAPI document
	// (set by NewStack; nil turns it off).
	Check *Contract
}

// order is the start order; the gateway last.
var order = []string{"taxonomy", "media", "catalog", "webhook", "console", "gateway"}

// gatewayAdmin names the gateway's second address (its admin listener).
const gatewayAdmin = "gateway-admin"

// NewStack starts a full stack for t and stops it when t ends. extra holds
// more environment per service (e.g. "gateway": {"PUBLIC_RATE_LIMIT=0"}).
func NewStack(t testing.TB, extra map[string][]string) *Stack {
	t.Helper()
	return newStack(t, extra, "")
}

// NewStackLoggingTo is NewStack with each service's output appended to
// <logDir>/<service>.log, as a container runtime keeps it, instead of this
// process's memory: benchmarks that load the services at their default log
// level measure the services, not this process reading their lines.
func NewStackLoggingTo(t testing.TB, extra map[string][]string, logDir string) *Stack {
	t.Helper()
	return newStack(t, extra, logDir)
}

func newStack(t testing.TB, extra map[string][]string, logDir string) *Stack {
	t.Helper()
	buildServices(t)
	mongoURI := testkit.MongoURI(t)
	s3 := testkit.MinIO(t)
	name := testkit.UniqueName(t)
	st := &Stack{t: t, addrs: map[string]string{}, env: map[string][]string{}, procs: map[string]*devserver.Process{}, logs: &testkit.Buffer{},
		logDir: logDir}
	for _, s := range append(order, gatewayAdmin) {
		addr, err := devserver.FreeAddr()
		testkit.Must(t, err, "free port")
		st.addrs[s] = addr
	}
	st.natsAt, _ = devserver.FreeAddr()
	st.natsDir = t.TempDir()
	st.StartNATS()
	natsURL := "nats://" + st.natsAt
	url := func(s string) string { return "http://" + st.addrs[s] }
	st.env = map[string][]string{
		"taxonomy": {"MONGODB_URI=" + mongoURI, "MONGODB_DATABASE=" + name + "tax", "NATS_URL=" + natsURL,
			"MODERATOR_EMAIL=" + ModeratorEmail},
		"media": {"MONGODB_URI=" + mongoURI, "MONGODB_DATABASE=" + name + "med", "NATS_URL=" + natsURL,
			"CATALOG_URL=" + url("catalog"), "S3_ENDPOINT=" + s3.Endpoint, "S3_ACCESS_KEY=" + s3.AccessKey,
			"S3_SECRET_KEY=" + s3.SecretKey, "S3_BUCKET=" + name},
		"catalog": {"MONGODB_URI=" + mongoURI, "MONGODB_DATABASE=" + name + "cat", "NATS_URL=" + natsURL,
			"TAXONOMY_URL=" + url("taxonomy"), "MEDIA_URL=" + url("media")},
		// Tests start their receivers on loopback, over plain http.
		"webhook": {"MONGODB_URI=" + mongoURI, "MONGODB_DATABASE=" + name + "wh", "NATS_URL=" + natsURL,
			"WEBHOOK_ALLOW_HTTP=true", "WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8,::1/128",
			"WEBHOOK_SECRET_KEY=doclib-e2e-webhook-secret-key-not-a-secret"},
		// The back-office console, served at /console/ on the admin listener.
		"console": {"CONSOLE_API_URL=" + url(gatewayAdmin), "CONSOLE_ORIGIN=" + url(gatewayAdmin), "CONSOLE_TOKEN_SIGNIN=true"},
		"gateway": {"TAXONOMY_URL=" + url("taxonomy"), "CATALOG_URL=" + url("catalog"), "MEDIA_URL=" + url("media"),
			"WEBHOOK_URL=" + url("webhook"), "CONSOLE_URL=" + url("console"),
			"BO_API_TOKENS=" + TokenName + ":editor:" + Token + "," + ViewerName + ":viewer:" + ViewerToken,
			"SHUTDOWN_DRAIN_DELAY=0s", "PUBLIC_ADDR=" + st.addrs["gateway"], "ADMIN_ADDR=" + st.addrs[gatewayAdmin],
			"CORS_ALLOWED_ORIGINS=" + BackOfficeOrigin, "NATS_URL=" + natsURL},
	}
	for _, s := range order {
		st.env[s] = append(st.env[s], "LOG_LEVEL=info", "IDENTITY_SIGNING_KEY="+IdentityKey)
		if s != "gateway" {
			st.env[s] = append(st.env[s], "HTTP_ADDR="+st.addrs[s])
		}
	}
	for s, e := range extra { // last, so they win
		st.env[s] = append(st.env[s], e...)
	}
	st.Check = NewContract(t) // every answer a test gets is checked against the OpenAPI document
	st.URL = url("gateway")
	st.AdminURL = url(gatewayAdmin)
	t.Cleanup(func() {
		for i := len(order) - 1; i >= 0; i-- {
			if p := st.procs[order[i]]; p != nil {
				p.Stop()
			}
		}
		st.StopNATS()
		if t.Failed() {
			path := filepath.Join(os.TempDir(), "doclib-e2e-"+testkit.UniqueName(t)+".log")
			_ = os.WriteFile(path, []byte(st.logs.String()), 0o644)
			t.Logf("service logs in %s; the last lines:\n%s", path, tail(st.logs.String(), 30))
		}
	})
	for _, s := range order {
		st.Start(s)
	}
	return st
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// SignAsGateway signs req as the stack's gateway would for the editor
// TokenName, so it can be sent to a service's own port.
func SignAsGateway(req *http.Request) {
	proof.NewSigner([]byte(IdentityKey)).SignRequest(req, identity.Caller{Name: TokenName, Role: identity.Editor})
}

// ServiceURL is the base URL of service s of the stack, to reach it
// without the gateway (benchmarks split the gateway's cost with it).
func (st *Stack) ServiceURL(s string) string { return "http://" + st.addrs[s] }

// Start starts (or restarts) service s and waits until it is ready. When
// another process took one of s's ports before s bound it (make test runs
// many test binaries at once), s moves to a new port, and the services
// already running that call it restart with the new address.
func (st *Stack) Start(s string) {
	st.t.Helper()
	for try := 1; ; try++ {
		p, err := st.start(s)
		if err == nil {
			st.procs[s] = p // only once ready: a move meanwhile restarts running services only
			return
		}
		taken := st.taken(s, err)
		if len(taken) == 0 || try == 3 {
			testkit.Must(st.t, err, s+" ready")
		}
		st.t.Logf("%v; moving %v to new ports", err, taken)
		for _, key := range taken {
			st.move(key)
		}
	}
}

func (st *Stack) start(s string) (*devserver.Process, error) {
	p, err := devserver.Start(s, filepath.Join(binDir, s), nil, st.env[s], st.output(s))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := devserver.WaitHTTP(ctx, p, "http://"+st.addrs[s]+"/readyz"); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// taken is which of s's addresses (the gateway has two) another process
// holds, when that is why s did not start.
func (st *Stack) taken(s string, err error) []string {
	if !errors.Is(err, devserver.ErrAddrTaken) && !errors.Is(err, devserver.ErrExited) {
		return nil // not a start that failed for its address
	}
	var keys []string
	for _, key := range []string{s, s + "-admin"} {
		if addr, ok := st.addrs[key]; ok && devserver.CheckFree(addr) != nil {
			keys = append(keys, key)
		}
	}
	return keys
}

// move gives the address of key a new port, in every service's
// environment, and restarts the running services whose environment held it.
func (st *Stack) move(key string) {
	addr, err := devserver.FreeAddr()
	testkit.Must(st.t, err, "free port")
	old := regexp.MustCompile(regexp.QuoteMeta(st.addrs[key]) + `\b`)
	st.addrs[key] = addr
	st.URL, st.AdminURL = "http://"+st.addrs["gateway"], "http://"+st.addrs[gatewayAdmin]
	for _, s := range order {
		changed := false
		for i, e := range st.env[s] {
			if n := old.ReplaceAllLiteralString(e, addr); n != e {
				st.env[s][i], changed = n, true
			}
		}
		if p := st.procs[s]; changed && p != nil && running(p) {
			st.Stop(s)
			st.Start(s)
		}
	}
}

func running(p *devserver.Process) bool {
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// output is where service s writes: the stack's log buffer, or its file
// in logDir (the child gets the file itself: nothing in this process reads
// its lines).
func (st *Stack) output(s string) io.Writer {
	if st.logDir == "" {
		return prefix(st.logs, s)
	}
	f, err := os.OpenFile(filepath.Join(st.logDir, s+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	testkit.Must(st.t, err, "log file of "+s)
	st.t.Cleanup(func() { f.Close() })
	return f
}

// Pid is the process id of service s.
func (st *Stack) Pid(s string) int { return st.procs[s].Pid() }

// Stop stops service s (SIGTERM, graceful).
func (st *Stack) Stop(s string) {
	st.procs[s].Stop()
	st.procs[s] = nil
}

// StartNATS starts the stack's NATS server (again), on the same address and
// store, so streams and consumers survive a restart.
func (st *Stack) StartNATS() {
	st.t.Helper()
	s, err := devserver.NATS(st.natsAt, st.natsDir)
	testkit.Must(st.t, err, "start NATS")
	st.natsSrv = s
}

// StopNATS stops the stack's NATS server.
func (st *Stack) StopNATS() {
	if st.natsSrv != nil {
		st.natsSrv.Shutdown()
		st.natsSrv.WaitForShutdown()
		st.natsSrv = nil
	}
}

func prefix(w io.Writer, name string) io.Writer {
	r, pw := io.Pipe()
	go func() {
		buf := make([]byte, 64<<10)
		var line []byte
		for {
			n, err := r.Read(buf)
			for _, b := range buf[:n] {
				line = append(line, b)
				if b == '\n' {
					_, _ = w.Write(append([]byte(name+" | "), line...))
					line = line[:0]
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return pw
}

// Response is an HTTP answer read whole.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.Body, err)
	}
}

// Problem is a problem+json body.
type Problem struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Errors []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// Problem decodes a problem body, checking its content type and status.
func (r Response) Problem(t testing.TB) Problem {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json; body %s", ct, r.Body)
	}
	var p Problem
	r.JSON(t, &p)
	if p.Status != r.Status {
		t.Errorf("problem status %d != HTTP status %d", p.Status, r.Status)
	}
	return p
}

// Fields lists the failing fields of a problem.
func (p Problem) Fields() string {
	var f []string
	for _, e := range p.Errors {
		f = append(f, e.Field)
	}
	return strings.Join(f, ",")
}

// Req sends a request to the gateway: a /bo path to its admin listener,
// anything else to its public one. A body that is a string is sent as
// application/json unless headers say otherwise.
func (st *Stack) Req(method, path string, body any, headers ...string) Response {
	st.t.Helper()
	base := st.URL
	if path == "/bo" || strings.HasPrefix(path, "/bo/") {
		base = st.AdminURL
	}
	return st.ReqAt(base, method, path, body, headers...)
}

// ReqAt is Req to the listener at base (URL or AdminURL).
func (st *Stack) ReqAt(base, method, path string, body any, headers ...string) Response {
	st.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		raw, err := json.Marshal(b)
		testkit.Must(st.t, err, "encode body")
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	testkit.Must(st.t, err, "request")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	testkit.Must(st.t, err, method+" "+path)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	testkit.Must(st.t, err, "read body")
	r := Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
	if st.Check != nil {
		st.Check.Check(st.t, req, r)
	}
	return r
}

// BO sends a back-office request with the stack's token.
func (st *Stack) BO(method, path string, body any, headers ...string) Response {
	st.t.Helper()
	return st.Req(method, path, body, append([]string{"Authorization", "Bearer " + Token}, headers...)...)
}

// Must sends a back-office request and fails unless it answers want.
func (st *Stack) Must(method, path string, body any, want int) Response {
	st.t.Helper()
	r := st.BO(method, path, body)
	if r.Status != want {
		st.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// Eventually polls cond until it holds or the timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
