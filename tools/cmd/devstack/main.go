// Command devstack runs the whole document library on one machine for
// development (`make dev`): FerretDB, NATS with JetStream and MinIO as the
// backing servers (unless MONGODB_URI, NATS_URL or S3_ENDPOINT point to real
// ones), then the six services, each as its own process on loopback. It
// stays in the foreground until Ctrl-C, and stops everything when one part
// fails. Data lives under .data/, so the next run resumes on it.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/doclib/libs/devserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "\ndevstack:", err)
		os.Exit(1)
	}
}

// Fixed loopback addresses of the development stack.
const (
	gatewayAddr  = "127.0.0.1:8080" // public listener
	adminAddr    = "127.0.0.1:8090" // admin listener: /bo and everything public
	taxonomyAddr = "127.0.0.1:8081"
	catalogAddr  = "127.0.0.1:8082"
	mediaAddr    = "127.0.0.1:8083"
	webhookAddr  = "127.0.0.1:8084"
	consoleAddr  = "127.0.0.1:8085" // reached through the admin listener's /console/
	mongoAddr    = "127.0.0.1:27017"
	natsAddr     = "127.0.0.1:4222"
	minioAddr    = "127.0.0.1:9000"
	// MinIO always listens for its web console too; DEV_MINIO_CONSOLE_ADDR
	// moves it off a port another program holds.
	minioConsole = "127.0.0.1:9001"
	// The back-office tokens of the development stack (BO_API_TOKENS
	// replaces both), and the key the gateway signs callers with for the
	// services (development only; a deployment sets its own secret).
	devTokens   = "dev:editor:dev-token,dev-viewer:viewer:dev-viewer-token"
	identityKey = "doclib-dev-identity-key-not-a-secret"
	// The key the webhook signing secrets are sealed with in .data's
	// database (development only, like identityKey; a deployment sets its
	// own, and a fixed one keeps .data readable from one run to the next).
	webhookSecretKey = "doclib-dev-webhook-secret-key-not-a-secret"
	// The dev origins the browser back-office may call the admin listener from.
	devOrigins = "http://localhost:5173,http://127.0.0.1:5173"
)

type stack struct {
	procs []*devserver.Process
	stops []func()
}

func (s *stack) add(p *devserver.Process) {
	s.procs = append(s.procs, p)
	s.stops = append(s.stops, p.Stop)
}

// stop stops everything in reverse order of start.
func (s *stack) stop() {
	for i := len(s.stops) - 1; i >= 0; i-- {
		s.stops[i]()
	}
}

func run(ctx context.Context) error {
	bin, err := devserver.BinDir()
	if err != nil {
		return err
	}
	root := filepath.Dir(bin)
	data := filepath.Join(root, ".data")
	logs := filepath.Join(data, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return err
	}

	mongoURI, natsURL, s3 := os.Getenv("MONGODB_URI"), os.Getenv("NATS_URL"), os.Getenv("S3_ENDPOINT")
	tokens := envOr("BO_API_TOKENS", devTokens)
	console, err := minioConsoleAddr(os.Getenv("DEV_MINIO_CONSOLE_ADDR"))
	if err != nil {
		return err
	}
	// Every address first, so a port in use stops us before anything starts.
	addrs := []string{gatewayAddr, adminAddr, taxonomyAddr, catalogAddr, mediaAddr, webhookAddr, consoleAddr}
	if mongoURI == "" {
		addrs = append(addrs, mongoAddr)
	}
	if natsURL == "" {
		addrs = append(addrs, natsAddr)
	}
	if s3 == "" {
		addrs = append(addrs, minioAddr, console)
	}
	for _, a := range addrs {
		if err := devserver.CheckFree(a); err != nil {
			return err
		}
	}

	st := &stack{}
	defer st.stop()
	say("starting backing servers (logs in .data/logs/)")
	if mongoURI == "" {
		p, db, err := devserver.FerretDB(ctx, bin, mongoAddr, filepath.Join(data, "ferretdb"), logFile(logs, "ferretdb"))
		if err != nil {
			return err
		}
		st.add(p)
		mongoURI = db.URI
		say("  FerretDB (MongoDB protocol)  " + db.URI)
		say(fmt.Sprintf("    on %s, write gate %s: %s", db.Backend, db.Gate, db.Reason))
	}
	if natsURL == "" {
		ns, err := devserver.NATS(natsAddr, filepath.Join(data, "nats"))
		if err != nil {
			return err
		}
		st.stops = append(st.stops, func() { ns.Shutdown(); ns.WaitForShutdown() })
		natsURL = "nats://" + natsAddr
		say("  NATS + JetStream             " + natsURL)
	}
	s3Env := []string{"S3_ENDPOINT=" + s3, "S3_ACCESS_KEY=" + os.Getenv("S3_ACCESS_KEY"), "S3_SECRET_KEY=" + os.Getenv("S3_SECRET_KEY")}
	if s3 == "" {
		cred := devserver.MinIOCredentials{Endpoint: minioAddr, AccessKey: "doclib-dev", SecretKey: "doclib-dev-secret"}
		p, err := devserver.MinIO(ctx, bin, minioAddr, console, filepath.Join(data, "minio"), cred, logFile(logs, "minio"))
		if err != nil {
			return err
		}
		st.add(p)
		s3Env = []string{"S3_ENDPOINT=" + cred.Endpoint, "S3_ACCESS_KEY=" + cred.AccessKey, "S3_SECRET_KEY=" + cred.SecretKey}
		say("  MinIO (S3)                   http://" + minioAddr + " (its console: http://" + console + ")")
	}

	common := []string{"MONGODB_URI=" + mongoURI, "NATS_URL=" + natsURL, "LOG_LEVEL=" + envOr("LOG_LEVEL", "info"),
		"IDENTITY_SIGNING_KEY=" + identityKey}
	services := []struct {
		name, addr string
		env        []string
	}{
		{"taxonomy", taxonomyAddr, append([]string{"MODERATOR_EMAIL=" + envOr("MODERATOR_EMAIL", "moderation@example.org")}, common...)},
		{"media", mediaAddr, append(append([]string{"CATALOG_URL=http://" + catalogAddr}, common...), s3Env...)},
		{"catalog", catalogAddr, append([]string{"TAXONOMY_URL=http://" + taxonomyAddr, "MEDIA_URL=http://" + mediaAddr}, common...)},
		// A receiver on the developer's own machine works out of the box:
		// plain http and loopback addresses are allowed here only.
		{"webhook", webhookAddr, append([]string{"WEBHOOK_ALLOW_HTTP=true", "WEBHOOK_ALLOWED_NETWORKS=127.0.0.0/8,::1/128",
			"WEBHOOK_SECRET_KEY=" + webhookSecretKey}, common...)},
		// The console calls /bo on the admin listener, which serves it at
		// /console/; it signs in with the development tokens.
		{"console", consoleAddr, []string{"CONSOLE_API_URL=http://" + adminAddr, "CONSOLE_ORIGIN=http://" + adminAddr,
			"CONSOLE_TOKEN_SIGNIN=true", "CONSOLE_DEVELOPMENT=true", "LOG_LEVEL=" + envOr("LOG_LEVEL", "info")}},
		{"gateway", gatewayAddr, []string{
			"TAXONOMY_URL=http://" + taxonomyAddr, "CATALOG_URL=http://" + catalogAddr, "MEDIA_URL=http://" + mediaAddr,
			"WEBHOOK_URL=http://" + webhookAddr, "CONSOLE_URL=http://" + consoleAddr,
			"BO_API_TOKENS=" + tokens, "LOG_LEVEL=" + envOr("LOG_LEVEL", "info"), "SHUTDOWN_DRAIN_DELAY=0s",
			"PUBLIC_ADDR=" + gatewayAddr, "ADMIN_ADDR=" + adminAddr, "IDENTITY_SIGNING_KEY=" + identityKey, "NATS_URL=" + natsURL,
			"CORS_ALLOWED_ORIGINS=" + envOr("CORS_ALLOWED_ORIGINS", devOrigins),
		}},
	}
	// Every service inherits this environment (devserver.Start), so the
	// gateway's own settings pass through as they are; say which.
	var passed []string
	for _, k := range gatewaySettings {
		if v, ok := os.LookupEnv(k); ok {
			passed = append(passed, k+"="+v)
		}
	}
	if len(passed) > 0 {
		say("gateway settings from the environment: " + strings.Join(passed, " "))
	}
	say("starting services")
	for _, s := range services {
		env := s.env
		if s.name != "gateway" { // the gateway's two addresses are in its env
			env = append([]string{"HTTP_ADDR=" + s.addr}, env...)
		}
		p, err := devserver.Start(s.name, filepath.Join(bin, s.name), nil, env, prefixed(s.name))
		if err != nil {
			return err
		}
		st.add(p)
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for i, s := range services {
		if err := devserver.WaitHTTP(wctx, st.procs[len(st.procs)-len(services)+i], "http://"+s.addr+"/readyz"); err != nil {
			return fmt.Errorf("%w (see its log lines above)", err)
		}
	}

	fmt.Printf(`
==================================================================
 Document library is running.
   Public API:        http://%[1]s/public/...     (the mobile app's listener)
   Back-office API:   http://%[2]s/bo/...         (admin listener; also serves /public)
   API reference:     http://%[1]s/docs
   Console:           http://%[2]s/console/   (sign in with a token below)
   Tokens:            %[3]s
   Try:  curl http://%[1]s/public/tags-categories
         curl -H 'Authorization: Bearer dev-token' http://%[2]s/bo/documents
 Services: taxonomy %[4]s, catalog %[5]s, media %[6]s, webhook %[7]s, console %[8]s
 Data in .data/ (delete it to start empty). Ctrl-C stops everything.
==================================================================
`, gatewayAddr, adminAddr, describeTokens(tokens), taxonomyAddr, catalogAddr, mediaAddr, webhookAddr, consoleAddr)

	// Wait for Ctrl-C or for any child to die.
	died := make(chan *devserver.Process, len(st.procs))
	for _, p := range st.procs {
		go func() {
			<-p.Done()
			died <- p
		}()
	}
	select {
	case <-ctx.Done():
		say("\nstopping")
		return nil
	case p := <-died:
		return fmt.Errorf("%s stopped unexpectedly (%v); stopping everything", p.Name, p.Err())
	}
}

// gatewaySettings are the gateway's variables (docs/platform.md's configuration reference) that
// make dev leaves to the caller, e.g. PUBLIC_RATE_LIMIT=0 for a load test
// from one address.
var gatewaySettings = []string{"PUBLIC_RATE_LIMIT", "PUBLIC_CACHE_TTL", "UPSTREAM_TIMEOUT", "TRUSTED_PROXIES",
	"MEDIA_MAX_UPLOAD_SIZE", "OIDC_ISSUER_URL", "OIDC_AUDIENCE"}

func say(s string) { fmt.Println(s) }

// describeTokens shows the development tokens with their roles; tokens
// given through BO_API_TOKENS are not printed.
func describeTokens(tokens string) string {
	if tokens != devTokens {
		return "from BO_API_TOKENS (not shown)"
	}
	return "dev-token (editor), dev-viewer-token (viewer)"
}

// minioConsoleAddr is where MinIO's console listens: DEV_MINIO_CONSOLE_ADDR
// (host:port) or 127.0.0.1:9001.
func minioConsoleAddr(v string) (string, error) {
	if v == "" {
		return minioConsole, nil
	}
	if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
		return "", fmt.Errorf("DEV_MINIO_CONSOLE_ADDR=%q: want host:port, e.g. 127.0.0.1:9011", v)
	}
	return v, nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logFile(dir, name string) io.Writer {
	f, err := os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil
	}
	return f
}

var outMu sync.Mutex

// prefixed writes each line of a service's output to stdout behind its name.
func prefixed(name string) io.Writer {
	r, w := io.Pipe()
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		tag := fmt.Sprintf("%-8s | ", name)
		for sc.Scan() {
			outMu.Lock()
			fmt.Println(tag + strings.TrimRight(sc.Text(), "\r"))
			outMu.Unlock()
		}
		if err := sc.Err(); err != nil && !errors.Is(err, io.ErrClosedPipe) {
			_, _ = io.Copy(io.Discard, r)
		}
	}()
	return w
}
