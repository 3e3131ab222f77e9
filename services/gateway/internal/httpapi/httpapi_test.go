package httpapi_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/libs/httpx"
	"github.com/doclib/libs/ratelimit"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/gateway/internal/route"
)

func TestForwarding(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	tests := []struct {
		name, method, path, token, contentType, body string
		upstream                                     route.Upstream
		wantQuery                                    string
	}{
		{name: "public list with query", method: "GET", path: "/public/documents?type=PDF&q=a%20b",
			upstream: route.Catalog, wantQuery: "type=PDF&q=a%20b"},
		{name: "public taxonomy", method: "GET", path: "/public/tags-categories", upstream: route.Taxonomy},
		{name: "public media", method: "GET", path: "/public/medias/m-1", upstream: route.Media},
		{name: "bo create tag", method: "POST", path: "/bo/tags", token: token1,
			contentType: "application/json", body: `{"id":"t1","name":"Tag","categoryId":"c1"}`, upstream: route.Taxonomy},
		{name: "bo patch document", method: "PATCH", path: "/bo/documents/d-1", token: token2,
			contentType: "application/json; charset=utf-8", body: `{"title":"x"}`, upstream: route.Catalog},
		{name: "bo delete media", method: "DELETE", path: "/bo/medias/m-1", token: token1, upstream: route.Media},
		{name: "bo restore", method: "POST", path: "/bo/documents/d-1/restore", token: token1, upstream: route.Catalog},
		{name: "bo delete category", method: "DELETE", path: "/bo/tags-categories/c-1", token: token1, upstream: route.Taxonomy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tt.method, h.url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			req.Header.Set("X-Request-ID", "req-"+strings.ReplaceAll(tt.name, " ", "-"))
			req.Header.Set("Accept-Language", "fr")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			got := decodeEcho(t, res)

			wantPath, _, _ := strings.Cut(tt.path, "?")
			if got.Upstream != string(tt.upstream) || got.Method != tt.method || got.Path != wantPath {
				t.Errorf("upstream saw %s %s %s, want %s %s %s", got.Upstream, got.Method, got.Path, tt.upstream, tt.method, wantPath)
			}
			if got.Query != tt.wantQuery {
				t.Errorf("query = %q, want %q", got.Query, tt.wantQuery)
			}
			if got.Body != tt.body {
				t.Errorf("body = %q, want %q", got.Body, tt.body)
			}
			if ct := got.Header.Get("Content-Type"); ct != tt.contentType {
				t.Errorf("Content-Type = %q, want %q", ct, tt.contentType)
			}
			if got.Header.Get("Accept-Language") != "fr" {
				t.Error("Accept-Language was not forwarded")
			}
			if a := got.Header.Get("Authorization"); a != "" {
				t.Errorf("Authorization %q was forwarded; the gateway must strip it", a)
			}
			if id := got.Header.Get("X-Request-ID"); id != req.Header.Get("X-Request-ID") {
				t.Errorf("upstream X-Request-ID = %q, want the client's %q", id, req.Header.Get("X-Request-ID"))
			}
			if got.Header.Get("X-Forwarded-For") == "" || got.Header.Get("X-Forwarded-Host") == "" {
				t.Errorf("X-Forwarded-For/Host not set: %v", got.Header)
			}
			if ids := res.Header.Values("X-Request-ID"); len(ids) != 1 || ids[0] != req.Header.Get("X-Request-ID") {
				t.Errorf("response X-Request-ID = %v, want exactly the client's id", ids)
			}
			if v := res.Header.Values("X-Content-Type-Options"); len(v) != 1 || v[0] != "nosniff" {
				t.Errorf("X-Content-Type-Options = %v, want exactly [nosniff]", v)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	tests := []struct {
		name   string
		header string
		want   int
	}{
		{"missing", "", http.StatusUnauthorized},
		{"invalid", "Bearer nope", http.StatusUnauthorized},
		{"not bearer", "Basic dG9rOg==", http.StatusUnauthorized},
		{"first token", "Bearer " + token1, http.StatusOK},
		{"second token", "Bearer " + token2, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest("GET", h.url+"/bo/documents", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if tt.want == http.StatusOK {
				decodeEcho(t, res)
				return
			}
			wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
			if !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("WWW-Authenticate = %q, want a Bearer challenge", res.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("upstream not contacted without credentials", func(t *testing.T) {
		h := start(t, options{})
		res := h.do(t, "POST", "/bo/documents", "", "application/json", strings.NewReader(`{}`))
		wantProblem(t, res, http.StatusUnauthorized, "unauthorized")
		if n := h.hits[route.Catalog].Load(); n != 0 {
			t.Errorf("catalog was contacted %d time(s) for an unauthenticated request", n)
		}
	})
	t.Run("token never logged", func(t *testing.T) {
		h := start(t, options{})
		h.do(t, "GET", "/bo/documents", token1, "", nil)
		h.do(t, "GET", "/bo/documents", "wrong-secret-token", "", nil)
		if h.logs.Contains(token1) || h.logs.Contains("wrong-secret-token") {
			t.Error("a bearer token appears in the logs")
		}
	})
}

func TestUnknownRoutes(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	tests := []struct {
		name, method, path string
		want               int
		wantAllow          []string
	}{
		{name: "unknown path", method: "GET", path: "/nope", want: 404},
		{name: "internal routes never forwarded", method: "GET", path: "/internal/tags?ids=a", want: 404},
		{name: "trailing slash", method: "GET", path: "/public/documents/", want: 404},
		{name: "unknown sub path", method: "GET", path: "/public/documents/d-1/other", want: 404},
		{name: "wrong method", method: "PUT", path: "/bo/tags/t-1", want: 405, wantAllow: []string{"PATCH", "DELETE"}},
		{name: "public write", method: "POST", path: "/public/documents", want: 405, wantAllow: []string{"GET", "HEAD"}},
		{name: "options", method: "OPTIONS", path: "/public/tags-categories", want: 405, wantAllow: []string{"GET", "HEAD"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := h.do(t, tt.method, tt.path, token1, "", nil)
			code := "not_found"
			if tt.want == 405 {
				code = "method_not_allowed"
			}
			wantProblem(t, res, tt.want, code)
			allow := res.Header.Get("Allow")
			for _, m := range tt.wantAllow {
				if !strings.Contains(allow, m) {
					t.Errorf("Allow = %q, want it to list %s", allow, m)
				}
			}
		})
	}
	for name, hits := range h.hits {
		if n := hits.Load(); n != 0 {
			t.Errorf("%s was contacted %d time(s) for unknown routes", name, n)
		}
	}
}

func TestBodyRules(t *testing.T) {
	t.Parallel()
	const maxUpload = 1 << 20
	drain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"read":%d}`, n)
	})
	h := start(t, options{maxUpload: maxUpload, handlers: map[route.Upstream]http.Handler{
		route.Catalog: drain, route.Media: drain, route.Taxonomy: drain,
	}})

	t.Run("JSON route with another type is 415", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "POST", "/bo/documents", token1, "text/plain", strings.NewReader(`{}`))
		wantProblem(t, res, http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
	t.Run("JSON route without a type is 415", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "PATCH", "/bo/tags/t-1", token1, "", strings.NewReader(`{}`))
		wantProblem(t, res, http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
	t.Run("upload route with JSON is 415", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "POST", "/bo/medias", token1, "application/json", strings.NewReader(`{}`))
		wantProblem(t, res, http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
	t.Run("upload without a multipart boundary is 400", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "POST", "/bo/medias", token1, "multipart/form-data", strings.NewReader(`garbage`))
		wantProblem(t, res, http.StatusBadRequest, "bad_request")
	})
	t.Run("JSON body at the limit passes", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "POST", "/bo/documents", token1, "application/json",
			io.LimitReader(zeros{}, httpx.MaxJSONBody)) // chunked: no Content-Length
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status = %d, want 200 for a body of exactly %d bytes", res.StatusCode, httpx.MaxJSONBody)
		}
	})
	t.Run("document import body over the JSON limit passes, over its own is 413", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "PUT", "/bo/import/documents/d1", token1, "application/json",
			io.LimitReader(zeros{}, httpx.MaxImportJSONBody))
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status = %d, want 200 for an import body of %d bytes", res.StatusCode, httpx.MaxImportJSONBody)
		}
		res = h.do(t, "PUT", "/bo/import/documents/d1/revisions/1", token1, "application/json",
			io.LimitReader(zeros{}, httpx.MaxImportJSONBody+32<<10))
		wantProblem(t, res, http.StatusRequestEntityTooLarge, "payload_too_large")
	})
	t.Run("chunked JSON body over the limit is 413", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "POST", "/bo/tags", token1, "application/json",
			io.LimitReader(zeros{}, httpx.MaxJSONBody+32<<10))
		wantProblem(t, res, http.StatusRequestEntityTooLarge, "payload_too_large")
	})
	t.Run("declared length over the limit is 413 without the upstream", func(t *testing.T) {
		t.Parallel()
		h := start(t, options{})
		head := rawRequest(t, h.url, "POST /bo/tags-categories HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+token1+
			"\r\nContent-Type: application/json\r\nContent-Length: "+fmt.Sprint(httpx.MaxJSONBody+1)+"\r\n\r\n{")
		if head.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d, want 413 at once", head.StatusCode)
		}
		if n := h.hits[route.Taxonomy].Load(); n != 0 {
			t.Errorf("taxonomy was contacted %d time(s); want the gateway to answer alone", n)
		}
	})
	t.Run("declared upload over the limit is 413 without the upstream", func(t *testing.T) {
		t.Parallel()
		h := start(t, options{maxUpload: maxUpload})
		head := rawRequest(t, h.url, "POST /bo/medias HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer "+token1+
			"\r\nContent-Type: multipart/form-data; boundary=xyz\r\nContent-Length: "+fmt.Sprint(maxUpload+httpapiFraming+1)+"\r\n\r\n--xyz")
		if head.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("status = %d, want 413 at once", head.StatusCode)
		}
		if n := h.hits[route.Media].Load(); n != 0 {
			t.Errorf("media was contacted %d time(s); want the gateway to answer alone", n)
		}
	})
	t.Run("streamed upload over the limit is 413", func(t *testing.T) {
		t.Parallel()
		body, ct := multipartBody(t, maxUpload+httpapiFraming)
		res := h.do(t, "POST", "/bo/medias", token1, ct, body)
		wantProblem(t, res, http.StatusRequestEntityTooLarge, "payload_too_large")
	})
}

// TestUploadStreamed is not parallel: it measures the process's allocations.
func TestUploadStreamed(t *testing.T) {
	const size = 20 << 20
	type result struct {
		Size int64  `json:"size"`
		Sum  string `json:"sum"`
	}
	media := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		part, err := mr.NextPart()
		if err != nil || part.FormName() != "file" {
			http.Error(w, "no file part", http.StatusBadRequest)
			return
		}
		sum := sha256.New()
		n, err := io.Copy(sum, part)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(result{n, hex.EncodeToString(sum.Sum(nil))})
	})
	h := start(t, options{handlers: map[route.Upstream]http.Handler{route.Media: media}})

	content := io.LimitReader(rand.Reader, size)
	sum := sha256.New()
	body, ct := multipartFrom(t, io.TeeReader(content, sum))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := h.do(t, "POST", "/bo/medias", token1, ct, body)
	raw, _ := io.ReadAll(res.Body)
	runtime.ReadMemStats(&after)

	if res.StatusCode != http.StatusCreated {
		t.Fatalf("status = %d, want 201; body %s", res.StatusCode, raw)
	}
	var got result
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Size != size || got.Sum != hex.EncodeToString(sum.Sum(nil)) {
		t.Errorf("media received %d bytes (sum %s), want %d bytes intact", got.Size, got.Sum, size)
	}
	// Client, gateway and upstream share this process; together they must
	// allocate far less than the body if nothing holds it whole.
	if grown := after.TotalAlloc - before.TotalAlloc; grown > size/2 {
		t.Errorf("allocated %d bytes while streaming %d; the body seems to be buffered", grown, size)
	}
}

func TestDownloadStreamedWithRange(t *testing.T) {
	t.Parallel()
	content := bytes.Repeat([]byte("0123456789"), 100_000)
	modified := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	file := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/pdf")
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("Content-Disposition", `inline; filename="a.pdf"`)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		http.ServeContent(w, r, "", modified, bytes.NewReader(content))
	})
	h := start(t, options{handlers: map[route.Upstream]http.Handler{route.Media: file, route.Catalog: file}})

	tests := []struct {
		name, path, token string
		header            map[string]string
		wantStatus        int
		wantRange         string
		wantBody          []byte
	}{
		{name: "whole", path: "/public/medias/m-1/download", wantStatus: 200, wantBody: content},
		{name: "range", path: "/public/medias/m-1/download", header: map[string]string{"Range": "bytes=100-199"},
			wantStatus: 206, wantRange: fmt.Sprintf("bytes 100-199/%d", len(content)), wantBody: content[100:200]},
		{name: "bo range", path: "/bo/documents/d-1/download", token: token1, header: map[string]string{"Range": "bytes=-10"},
			wantStatus: 206, wantRange: fmt.Sprintf("bytes %d-%d/%d", len(content)-10, len(content)-1, len(content)), wantBody: content[len(content)-10:]},
		{name: "unsatisfiable", path: "/public/documents/d-1/download", header: map[string]string{"Range": "bytes=99999999-"},
			wantStatus: 416},
		{name: "not modified", path: "/public/medias/m-1/download", header: map[string]string{"If-None-Match": `"v1"`},
			wantStatus: 304},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest("GET", h.url+tt.path, nil)
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d", res.StatusCode, tt.wantStatus)
			}
			if got := res.Header.Get("Content-Range"); tt.wantRange != "" && got != tt.wantRange {
				t.Errorf("Content-Range = %q, want %q", got, tt.wantRange)
			}
			if tt.wantBody != nil && !bytes.Equal(body, tt.wantBody) {
				t.Errorf("body of %d bytes differs from the %d expected", len(body), len(tt.wantBody))
			}
			if tt.wantStatus == 200 || tt.wantStatus == 206 {
				for k, want := range map[string]string{
					"ETag": `"v1"`, "Accept-Ranges": "bytes", "Content-Type": "application/pdf",
					"Content-Disposition": `inline; filename="a.pdf"`, "Content-Length": fmt.Sprint(len(tt.wantBody)),
				} {
					if got := res.Header.Get(k); got != want {
						t.Errorf("%s = %q, want %q", k, got, want)
					}
				}
				if v := res.Header.Values("X-Content-Type-Options"); len(v) != 1 {
					t.Errorf("X-Content-Type-Options = %v, want one nosniff", v)
				}
			}
		})
	}
}

func TestClientAbortMidDownload(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(done)
		w.Header().Set("Content-Type", "application/octet-stream")
		chunk := make([]byte, 64<<10)
		for range 1024 { // 64 MiB at most; the client leaves long before
			if _, err := w.Write(chunk); err != nil {
				return
			}
			http.NewResponseController(w).Flush()
			time.Sleep(time.Millisecond)
		}
	})
	h := start(t, options{handlers: map[route.Upstream]http.Handler{route.Media: slow}})
	res := h.do(t, "GET", "/public/medias/m-1/download", "", "", nil)
	if _, err := io.ReadFull(res.Body, make([]byte, 256<<10)); err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close() // the client leaves mid-stream
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream kept streaming 10s after the client left")
	}
	time.Sleep(100 * time.Millisecond) // let the gateway's handler unwind
	for _, logs := range []*testkit.Buffer{h.logs, h.srvLogs} {
		if logs.Contains("panic") || logs.Contains("goroutine ") {
			t.Errorf("a client leaving mid-stream was logged as a panic:\n%s", logs)
		}
	}
}

func TestUpstreamFailures(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	_ = ln.Close()

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":503,"code":"unavailable","detail":"the taxonomy database is unavailable"}`)
	})
	h := start(t, options{
		urls:            map[route.Upstream]string{route.Media: closed},
		handlers:        map[route.Upstream]http.Handler{route.Catalog: hang, route.Taxonomy: failing},
		upstreamTimeout: 200 * time.Millisecond,
	})

	t.Run("unreachable is 502", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		res := h.do(t, "GET", "/public/medias/m-1", "", "", nil)
		p := wantProblem(t, res, http.StatusBadGateway, "bad_gateway")
		if !strings.Contains(p.Detail, "media service") || strings.Contains(p.Detail, "127.0.0.1") {
			t.Errorf("detail %q should name the media service in plain words", p.Detail)
		}
		if d := time.Since(began); d > time.Second {
			t.Errorf("took %v, want a quick answer", d)
		}
	})
	t.Run("no answer is 504 within the upstream timeout", func(t *testing.T) {
		t.Parallel()
		began := time.Now()
		res := h.do(t, "GET", "/public/documents", "", "", nil)
		p := wantProblem(t, res, http.StatusGatewayTimeout, "upstream_timeout")
		if !strings.Contains(p.Detail, "catalog service") {
			t.Errorf("detail %q should name the catalog service", p.Detail)
		}
		if d := time.Since(began); d > 2*time.Second {
			t.Errorf("took %v with a 200ms upstream timeout", d)
		}
	})
	t.Run("upstream 5xx passes through", func(t *testing.T) {
		t.Parallel()
		res := h.do(t, "GET", "/public/tags-categories", "", "", nil)
		p := wantProblem(t, res, http.StatusServiceUnavailable, "unavailable")
		if p.Detail != "the taxonomy database is unavailable" {
			t.Errorf("detail = %q, want the upstream's own", p.Detail)
		}
	})
}

// The gateway's readiness depends on no upstream: a service that is down
// or unready makes its routes fail, never the whole edge.
func TestReadiness(t *testing.T) {
	t.Parallel()
	notReady := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	tests := []struct {
		name     string
		handlers map[route.Upstream]http.Handler
		urls     map[route.Upstream]string
	}{
		{"all ready", nil, nil},
		{"media not ready", map[route.Upstream]http.Handler{route.Media: notReady}, nil},
		{"catalog unreachable", nil, map[route.Upstream]string{route.Catalog: "http://127.0.0.1:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := start(t, options{handlers: tt.handlers, urls: tt.urls})
			if res := h.do(t, "GET", "/readyz", "", "", nil); res.StatusCode != http.StatusOK {
				t.Errorf("/readyz = %d, want 200 whatever the upstreams", res.StatusCode)
			}
			if res := h.do(t, "GET", "/healthz", "", "", nil); res.StatusCode != http.StatusOK {
				t.Errorf("/healthz = %d, want 200 whatever the upstreams", res.StatusCode)
			}
		})
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	h := start(t, options{limiter: ratelimit.New(1, 2, 100)})
	for i := range 2 {
		if res := h.do(t, "GET", "/public/documents", "", "", nil); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d within the burst: status %d, want 200", i+1, res.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", h.url+"/public/tags-categories", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9") // not trusted: must not reset the bucket
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	wantProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if ra := res.Header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After = %q, want 1", ra)
	}
	for i := range 10 {
		if res := h.do(t, "GET", "/bo/documents", token1, "", nil); res.StatusCode != http.StatusOK {
			t.Fatalf("back-office request %d: status %d, want 200 (no rate limit on /bo)", i+1, res.StatusCode)
		}
	}
}

// httpapiFraming mirrors httpapi.UploadFraming.
const httpapiFraming = 64 << 10

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// rawRequest writes head on a fresh connection and reads the response, so a
// test controls the declared Content-Length regardless of the body sent.
func rawRequest(t *testing.T, base, head string) *http.Response {
	t.Helper()
	u, _ := url.Parse(base)
	conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return res
}

// multipartBody streams a multipart form whose file part holds n bytes.
func multipartBody(t *testing.T, n int64) (io.Reader, string) {
	return multipartFrom(t, io.LimitReader(zeros{}, n))
}

func multipartFrom(t *testing.T, file io.Reader) (io.Reader, string) {
	t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		part, err := mw.CreateFormFile("file", "big.pdf")
		if err == nil {
			_, err = io.Copy(part, file)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr, mw.FormDataContentType()
}

func TestExpectContinueKeepsGatewayHeaders(t *testing.T) {
	t.Parallel()
	h := start(t, options{})
	body, ct := multipartBody(t, 256<<10)
	req, _ := http.NewRequest("POST", h.url+"/bo/medias", body)
	req.Header.Set("Authorization", "Bearer "+token1)
	req.Header.Set("Content-Type", ct)
	req.Header.Set("Expect", "100-continue")
	req.Header.Set("X-Request-ID", "upload-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	got := decodeEcho(t, res)
	if len(got.Body) < 256<<10 {
		t.Errorf("upstream received %d bytes, want the whole form", len(got.Body))
	}
	if got := res.Header.Values("X-Request-ID"); len(got) != 1 || got[0] != "upload-1" {
		t.Errorf("response X-Request-ID = %v, want [upload-1]", got)
	}
	if got := res.Header.Get("X-Content-Type-Options"); got != "nosniff" {
		t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
	}
}

// TestMicroCache: the public listing is answered from memory, and a
// back-office write through the gateway makes the next read ask the catalog
// again, so its author sees it at once.
func TestMicroCache(t *testing.T) {
	t.Parallel()
	var version atomic.Int64
	catalog := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			version.Add(1) // a write
			w.WriteHeader(http.StatusCreated)
			return
		}
		etag := fmt.Sprintf(`"v%d"`, version.Load())
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `[%d]`, version.Load())
	})
	h := start(t, options{cacheTTL: time.Hour, handlers: map[route.Upstream]http.Handler{route.Catalog: catalog}})
	read := func() string {
		t.Helper()
		res := h.do(t, "GET", "/public/documents", "", "", nil)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Header.Get("X-Request-ID") == "" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("listing: %d %v", res.StatusCode, res.Header)
		}
		return string(body)
	}
	if a, b := read(), read(); a != "[0]" || b != "[0]" || h.hits[route.Catalog].Load() != 1 {
		t.Fatalf("two reads: %q %q, catalog asked %d times; want one ask", a, b, h.hits[route.Catalog].Load())
	}
	if res := h.do(t, "POST", "/bo/documents", "", "application/json", strings.NewReader(`{}`)); res.StatusCode != 401 {
		t.Fatalf("unauthenticated write: %d", res.StatusCode)
	}
	if got := read(); got != "[0]" || h.hits[route.Catalog].Load() != 1 {
		t.Errorf("a refused write invalidated the cache: %q, catalog asked %d times", got, h.hits[route.Catalog].Load())
	}
	if res := h.do(t, "POST", "/bo/documents", token1, "application/json", strings.NewReader(`{}`)); res.StatusCode != 201 {
		t.Fatalf("write: %d", res.StatusCode)
	}
	if got := read(); got != "[1]" {
		t.Errorf("read after a write through the gateway: %q, want [1]", got)
	}
	if res := h.do(t, "GET", "/public/documents?x=1", "", "", nil); res.StatusCode != 200 {
		t.Errorf("with a query (proxied, not cached): %d", res.StatusCode)
	}
}

// Every GET route answers HEAD through the gateway: forwarded as HEAD (or
// answered from the micro-cache), with the GET's status and headers and
// no body; /bo needs credentials for HEAD as for GET.
func TestHeadOnEveryGet(t *testing.T) {
	t.Parallel()
	for _, cacheTTL := range []time.Duration{0, time.Hour} {
		h := start(t, options{cacheTTL: cacheTTL})
		for _, r := range route.Table() {
			if r.Method != http.MethodGet {
				continue
			}
			path := strings.ReplaceAll(r.Path, ":id", "x-1")
			get := h.do(t, "GET", path, token1, "", nil)
			head := h.do(t, "HEAD", path, token1, "", nil)
			body, _ := io.ReadAll(head.Body)
			if head.StatusCode != get.StatusCode || len(body) != 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") ||
				head.Header.Get("X-Request-ID") == "" {
				t.Errorf("cache %s, HEAD %s: %d %v with %d body bytes; want GET's %d %v and no body",
					cacheTTL, path, head.StatusCode, head.Header, len(body), get.StatusCode, get.Header)
			}
			if anon := h.do(t, "HEAD", path, "", "", nil); r.BackOffice() && (anon.StatusCode != 401 || anon.Header.Get("WWW-Authenticate") == "") {
				t.Errorf("HEAD %s without a token: %d %v, want 401 with WWW-Authenticate", path, anon.StatusCode, anon.Header)
			}
		}
	}
}
