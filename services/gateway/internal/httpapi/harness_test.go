package httpapi_test

import (
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/identity"
	"github.com/doclib/libs/identity/proof"
	"github.com/doclib/libs/logging"
	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/gateway/internal/auth"
	"github.com/doclib/services/gateway/internal/bodyread"
	"github.com/doclib/services/gateway/internal/httpapi"
	"github.com/doclib/services/gateway/internal/microcache"
	"github.com/doclib/services/gateway/internal/proxy"
	"github.com/doclib/services/gateway/internal/reference"
	"github.com/doclib/services/gateway/internal/route"
)

// Tokens the test gateway accepts on /bo.
const (
	token1      = "tok-first-0123456789"  // alice, editor
	token2      = "tok-second-0123456789" // bob, editor
	viewerToken = "tok-viewer-0123456789" // carol, viewer
)

// identityKey is the key the test gateway signs callers with.
var identityKey = []byte("test-identity-key-0123456789abcdef")

type options struct {
	handlers        map[route.Upstream]http.Handler // default: echo
	urls            map[route.Upstream]string       // overrides a started upstream
	limiter         *ratelimit.Limiter
	maxUpload       int64
	upstreamTimeout time.Duration
	cacheTTL        time.Duration // > 0 turns the micro-cache on
	failures        *ratelimit.Limiter
	corsOrigins     []string
	bodyRead        bodyread.Config
	console         http.Handler    // served at /console/ on the admin listener
	verifiers       []auth.Verifier // asked after the static tokens
	changes         http.Handler    // serves both live streams; default: the echo upstream
}

type harness struct {
	url       string // the admin listener: /bo and everything public
	publicURL string // the public listener
	hits      map[route.Upstream]*atomic.Int64
	logs      *testkit.Buffer // the gateway's logger
	srvLogs   *testkit.Buffer // net/http's own error log
}

// start runs a gateway through the real engine in front of real upstream
// HTTP servers.
func start(t *testing.T, o options) *harness {
	t.Helper()
	if o.maxUpload == 0 {
		o.maxUpload = 100 << 20
	}
	if o.upstreamTimeout == 0 {
		o.upstreamTimeout = 5 * time.Second
	}
	h := &harness{hits: map[route.Upstream]*atomic.Int64{}, logs: &testkit.Buffer{}, srvLogs: &testkit.Buffer{}}
	lg := logging.New(h.logs, "gateway", "debug")
	transport := proxy.NewTransport(o.upstreamTimeout)
	upstreams := map[route.Upstream]http.Handler{}
	origins := map[route.Upstream]microcache.Origin{}
	for _, name := range route.Upstreams() {
		handler := o.handlers[name]
		if handler == nil {
			handler = echo(name)
		}
		hits := &atomic.Int64{}
		h.hits[name] = hits
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				hits.Add(1)
			}
			handler.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		raw := srv.URL
		if u, ok := o.urls[name]; ok {
			raw = u
		}
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		upstreams[name] = proxy.New(string(name), u, transport, lg)
		origins[name] = microcache.Origin{Target: u, Transport: transport, Fail: proxy.ErrorHandler(string(name), lg)}
	}
	var cache *microcache.Cache
	if o.cacheTTL > 0 {
		cache = microcache.New(o.cacheTTL, microcache.Limits{MaxBody: 1 << 20, MaxTotal: 1 << 30, MaxQueryTotal: 1 << 30})
	}
	authenticator, err := auth.New(o.failures, append([]auth.Verifier{auth.NewStatic([]auth.StaticToken{
		{Name: "alice", Role: identity.Editor, Token: token1},
		{Name: "bob", Role: identity.Editor, Token: token2},
		{Name: "carol", Role: identity.Viewer, Token: viewerToken},
	})}, o.verifiers...)...)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reference.Load()
	if err != nil {
		t.Fatal(err)
	}
	changes := o.changes
	if changes == nil {
		changes = upstreams[route.Taxonomy]
	}
	engines, err := httpapi.New(httpapi.Deps{
		Log: lg, Upstreams: upstreams, Cache: cache, Origins: origins, Limiter: o.limiter,
		Auth: authenticator, Signer: proof.NewSigner(identityKey),
		MaxUploadSize: o.maxUpload, Health: httpx.NewHealth(nil), CORSOrigins: o.corsOrigins,
		Reference: ref, BodyRead: o.bodyRead, Console: o.console,
		// The echo upstream stands in for the live streams (package changes
		// tests them).
		PublicChanges: changes, BOChanges: changes,
	})
	if err != nil {
		t.Fatal(err)
	}
	serve := func(e http.Handler) string {
		gw := httptest.NewUnstartedServer(e)
		gw.Config.ErrorLog = log.New(h.srvLogs, "", 0)
		gw.Start()
		t.Cleanup(gw.Close)
		return gw.URL
	}
	h.url = serve(engines.Admin)
	h.publicURL = serve(engines.Public)
	return h
}

// echoed is what the echo upstream answers: what it received.
type echoed struct {
	Upstream string      `json:"upstream"`
	Method   string      `json:"method"`
	Path     string      `json:"path"`
	Query    string      `json:"query"`
	Header   http.Header `json:"header"`
	Body     string      `json:"body"`
}

func echo(name route.Upstream) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusOK)
			return
		}
		body, _ := io.ReadAll(r.Body)
		// Real services echo the request id and set nosniff too.
		w.Header().Set("X-Request-ID", r.Header.Get("X-Request-ID"))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(echoed{
			Upstream: string(name), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			Header: r.Header, Body: string(body),
		})
	})
}

// do sends a request to the gateway; token "" sends no Authorization.
func (h *harness) do(t *testing.T, method, path, token, contentType string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

type problemBody struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// wantProblem checks res is a problem document with status and code.
func wantProblem(t *testing.T, res *http.Response, status int, code string) problemBody {
	t.Helper()
	var p problemBody
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		t.Fatalf("status = %d, want %d; body %s", res.StatusCode, status, raw)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q, want application/problem+json", ct)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatalf("body %q is not a problem document: %v", raw, err)
	}
	if p.Status != status || p.Code != code {
		t.Errorf("problem status %d code %q, want %d %q", p.Status, p.Code, status, code)
	}
	return p
}

func decodeEcho(t *testing.T, res *http.Response) echoed {
	t.Helper()
	var e echoed
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(res.Body)
		t.Fatalf("status = %d, want 200 from the echo upstream; body %s", res.StatusCode, raw)
	}
	if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e
}
