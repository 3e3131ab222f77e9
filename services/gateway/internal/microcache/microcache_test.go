package microcache

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// origin is a stand-in for the catalog's listing: its body and ETag can be
// changed, it answers If-None-Match with 304, and it counts requests.
type origin struct {
	mu       sync.Mutex
	body     string
	etag     string
	status   int           // when not 0, answered instead (a problem)
	noETag   bool          // answer 200 without an ETag
	hangUp   bool          // close the connection without an answer
	delay    chan struct{} // when not nil, each request waits for a receive
	requests atomic.Int64
	lastINM  atomic.Value // the last If-None-Match received
	lastAE   atomic.Value // the last Accept-Encoding received
}

func (o *origin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.requests.Add(1)
	o.lastINM.Store(r.Header.Get("If-None-Match"))
	o.lastAE.Store(r.Header.Get("Accept-Encoding"))
	o.mu.Lock()
	body, etag, status, noETag, delay, hangUp := o.body, o.etag, o.status, o.noETag, o.delay, o.hangUp
	o.mu.Unlock()
	if delay != nil {
		<-delay
	}
	if hangUp {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	w.Header().Set("X-Request-ID", "from-the-origin")
	if status != 0 {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"code":"unavailable"}`)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	if !noETag {
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body))) // as rendering.Serve does
	_, _ = io.WriteString(w, body)
}

func (o *origin) set(f func(o *origin)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	f(o)
}

type fixture struct {
	cache  *Cache
	origin *origin
	h      http.Handler
	next   atomic.Int64 // requests that reached next
	// the Cache-Control of the last request that reached next
	nextCacheControl atomic.Value
	failed           atomic.Int64
}

func newFixture(t *testing.T, ttl time.Duration) *fixture {
	t.Helper()
	f := &fixture{origin: &origin{body: `[{"id":"a"}]`, etag: `"v1"`}}
	srv := httptest.NewServer(f.origin)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	f.cache = New(ttl, Limits{MaxBody: 1 << 20, MaxTotal: 1 << 30, MaxQueryTotal: 1 << 30})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.nextCacheControl.Store(r.Header.Get("Cache-Control"))
		f.next.Add(1)
		w.WriteHeader(http.StatusTeapot)
	})
	f.h = f.cache.Route(Origin{Target: u, Transport: srv.Client().Transport, Fail: func(w http.ResponseWriter, r *http.Request, err error) {
		f.failed.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}}, next)
	return f
}

func (f *fixture) get(t *testing.T, method, target string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func TestServesFromMemoryWithinTTL(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	for i := range 5 {
		w := f.get(t, "GET", "/public/documents")
		if w.Code != 200 || w.Body.String() != `[{"id":"a"}]` {
			t.Fatalf("request %d: %d %q", i, w.Code, w.Body)
		}
		h := w.Header()
		if h.Get("ETag") != `"v1"` || h.Get("Content-Type") != "application/json; charset=utf-8" ||
			h.Get("Cache-Control") != "no-cache" || h.Get("Content-Length") != "12" {
			t.Errorf("request %d: headers %v", i, h)
		}
		if h.Get("X-Request-ID") != "" {
			t.Errorf("the origin's X-Request-ID was repeated: the gateway sets its own")
		}
	}
	if n := f.origin.requests.Load(); n != 1 {
		t.Errorf("origin asked %d times, want 1", n)
	}
}

func TestRevalidatesWithTheETag(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Millisecond)
	f.get(t, "GET", "/public/documents")
	time.Sleep(5 * time.Millisecond)
	w := f.get(t, "GET", "/public/documents")
	if w.Code != 200 || w.Body.String() != `[{"id":"a"}]` {
		t.Fatalf("after a 304: %d %q", w.Code, w.Body)
	}
	if n, inm := f.origin.requests.Load(), f.origin.lastINM.Load(); n != 2 || inm != `"v1"` {
		t.Errorf("origin asked %d times, last If-None-Match %q; want 2 and the kept ETag", n, inm)
	}

	f.origin.set(func(o *origin) { o.body, o.etag = `[{"id":"b"}]`, `"v2"` })
	time.Sleep(5 * time.Millisecond)
	if w := f.get(t, "GET", "/public/documents"); w.Body.String() != `[{"id":"b"}]` || w.Header().Get("ETag") != `"v2"` {
		t.Errorf("after a change: %q %q", w.Body, w.Header().Get("ETag"))
	}
}

// An answer's time to live counts from when the origin was asked: one
// that took longer than the ttl to come is due at once, so no answer is
// served longer than the ttl after the origin confirmed it.
func TestTTLCountsFromTheQuestion(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 50*time.Millisecond)
	release := make(chan struct{})
	f.origin.set(func(o *origin) { o.delay = release })
	go func() {
		time.Sleep(80 * time.Millisecond) // longer than the ttl
		close(release)
	}()
	f.get(t, "GET", "/public/documents")
	f.get(t, "GET", "/public/documents")
	if n := f.origin.requests.Load(); n != 2 {
		t.Errorf("origin asked %d times, want 2: an answer asked for longer than the ttl ago is not fresh", n)
	}
}

func TestInvalidateRevalidatesAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	f.get(t, "GET", "/public/documents")
	f.origin.set(func(o *origin) { o.body, o.etag = `[]`, `"v2"` })
	f.cache.Invalidate()
	if w := f.get(t, "GET", "/public/documents"); w.Body.String() != `[]` {
		t.Errorf("after Invalidate: %q, want the new body", w.Body)
	}
	if w := f.get(t, "GET", "/public/documents"); w.Body.String() != `[]` || f.origin.requests.Load() != 2 {
		t.Errorf("then from memory again: %q, origin asked %d times", w.Body, f.origin.requests.Load())
	}
}

func TestConditionalAndHeadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	w := f.get(t, "GET", "/public/documents", "If-None-Match", `"v0", "v1"`)
	if w.Code != 304 || w.Body.Len() != 0 || w.Header().Get("ETag") != `"v1"` || w.Header().Get("Cache-Control") != "no-cache" {
		t.Errorf("matching If-None-Match: %d %q %v", w.Code, w.Body, w.Header())
	}
	if w.Header().Get("Content-Type") != "" || w.Header().Get("Content-Length") != "" {
		t.Errorf("a 304 must not describe a body: %v", w.Header())
	}
	if w := f.get(t, "GET", "/public/documents", "If-None-Match", `"other"`); w.Code != 200 {
		t.Errorf("other If-None-Match: %d", w.Code)
	}
	w = f.get(t, "HEAD", "/public/documents")
	if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") != "12" {
		t.Errorf("HEAD: %d %q %v", w.Code, w.Body, w.Header())
	}
}

func TestAnswersNotKeptArePassedThrough(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	f.origin.set(func(o *origin) { o.status = http.StatusServiceUnavailable })
	for range 2 {
		w := f.get(t, "GET", "/public/documents")
		if w.Code != 503 || w.Body.String() != `{"code":"unavailable"}` || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("upstream problem: %d %q %v", w.Code, w.Body, w.Header())
		}
	}
	if n := f.origin.requests.Load(); n != 2 {
		t.Errorf("a problem was kept: origin asked %d times, want 2", n)
	}

	f.origin.set(func(o *origin) { o.status, o.noETag = 0, true })
	for range 2 {
		if w := f.get(t, "GET", "/public/documents"); w.Code != 200 || w.Body.String() != `[{"id":"a"}]` {
			t.Errorf("200 without ETag: %d %q", w.Code, w.Body)
		}
	}
	if n := f.origin.requests.Load(); n != 4 {
		t.Errorf("an answer without ETag was kept: origin asked %d times, want 4", n)
	}
}

func TestOtherRequestsGoToNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	for _, tt := range []struct{ method, target string }{
		{"GET", "/public/documents?x=1"},
		{"POST", "/public/documents"},
	} {
		if w := f.get(t, tt.method, tt.target); w.Code != http.StatusTeapot {
			t.Errorf("%s %s: %d, want it handed to next", tt.method, tt.target, w.Code)
		}
	}
	if f.origin.requests.Load() != 0 {
		t.Error("the cache asked the origin for a request it does not answer")
	}
}

func TestTransportFailureIsAnsweredByFail(t *testing.T) {
	t.Parallel()
	u, _ := url.Parse("http://127.0.0.1:1")
	var failed error
	h := New(time.Hour, Limits{MaxBody: 1 << 20, MaxTotal: 1 << 30, MaxQueryTotal: 1 << 30}).Route(Origin{Target: u, Transport: http.DefaultTransport,
		Fail: func(w http.ResponseWriter, r *http.Request, err error) { failed = err; w.WriteHeader(502) }}, nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/public/documents", nil))
	var opErr *net.OpError
	if w.Code != 502 || failed == nil || !errors.As(failed, &opErr) {
		t.Errorf("unreachable origin: %d, error %v", w.Code, failed)
	}
}

func TestStaleWhileOneRevalidates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Millisecond)
	f.get(t, "GET", "/public/documents")
	release := make(chan struct{})
	f.origin.set(func(o *origin) { o.delay = release })
	time.Sleep(5 * time.Millisecond)

	done := make(chan struct{})
	go func() { // this one revalidates and waits for the origin
		defer close(done)
		f.get(t, "GET", "/public/documents")
	}()
	for f.origin.requests.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if w := f.get(t, "GET", "/public/documents"); w.Code != 200 || w.Body.String() != `[{"id":"a"}]` {
		t.Errorf("while another request revalidates: %d %q, want the kept answer at once", w.Code, w.Body)
	}
	close(release)
	<-done
}

func TestConcurrentRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Millisecond)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 50 {
				if i == 0 && j%10 == 0 {
					f.cache.Invalidate()
				}
				w := f.get(t, "GET", "/public/documents")
				if w.Code != 200 || !strings.HasPrefix(w.Body.String(), `[{"id":"a"}]`) {
					t.Errorf("%d %q", w.Code, w.Body)
					return
				}
			}
		})
	}
	wg.Wait()
}

// The identity body is asked for and kept; each client gets the encoding it
// accepts, with the ETag the service itself would give it.
func TestEncodingsAreKeptApart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, time.Hour)
	big := `[` + strings.Repeat(`{"id":"a","title":"Un titre assez long"},`, 60) + `{"id":"z"}]`
	f.origin.set(func(o *origin) { o.body = big })
	plain := f.get(t, "GET", "/public/documents")
	gz := f.get(t, "GET", "/public/documents", "Accept-Encoding", "gzip")
	br := f.get(t, "GET", "/public/documents", "Accept-Encoding", "br")
	if plain.Body.String() != big || plain.Header().Get("Content-Encoding") != "" || plain.Header().Get("ETag") != `"v1"` {
		t.Errorf("identity: %v", plain.Header())
	}
	if gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("ETag") != `"v1-gzip"` || gz.Body.Len() >= len(big)/2 {
		t.Errorf("gzip: %v, %d bytes", gz.Header(), gz.Body.Len())
	}
	if br.Header().Get("Content-Encoding") != "br" || br.Header().Get("ETag") != `"v1-br"` {
		t.Errorf("br: %v", br.Header())
	}
	for _, w := range []*httptest.ResponseRecorder{plain, gz, br} {
		if w.Header().Get("Vary") != "Accept-Encoding" || w.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("headers %v: want Vary and the origin's Cache-Control", w.Header())
		}
	}
	if w := f.get(t, "GET", "/public/documents", "If-None-Match", `"v1-gzip"`); w.Code != 304 || w.Header().Get("ETag") != `"v1-gzip"` {
		t.Errorf("If-None-Match with the gzip ETag: %d %v", w.Code, w.Header())
	}
	if n, ae := f.origin.requests.Load(), f.origin.lastAE.Load(); n != 1 || ae != "identity" {
		t.Errorf("origin asked %d times, last Accept-Encoding %q; want once, for the identity body", n, ae)
	}
}

// Each path of a route has its own entry; an answer that is not kept
// leaves nothing behind; the kept answers stay within the budget.
func TestOneEntryPerPathWithinTheBudget(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/public/documents/"), "/detail")
		if id == "gone" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.Header().Set("ETag", `"`+id+`"`)
		if r.Header.Get("If-None-Match") == `"`+id+`"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = io.WriteString(w, `{"id":"`+id+`","pad":"`+strings.Repeat("x", 80)+`"}`)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	const budget = 4 * (entryOverhead + 250) // room for about 4 answers of ~100 bytes, counted twice, and their keys
	c := New(time.Hour, Limits{MaxBody: 1 << 20, MaxTotal: budget, MaxQueryTotal: budget})
	h := c.Route(Origin{Target: u, Transport: srv.Client().Transport, Fail: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(502) }}, nil)
	get := func(id string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/public/documents/"+id+"/detail", nil))
		return w
	}
	for _, id := range []string{"a", "b", "a", "b"} {
		if w := get(id); w.Code != 200 || !strings.Contains(w.Body.String(), `"id":"`+id+`"`) || w.Header().Get("ETag") != `"`+id+`"` {
			t.Fatalf("detail %s: %d %q", id, w.Code, w.Body)
		}
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("origin asked %d times for two paths asked twice each, want 2", n)
	}
	if w := get("gone"); w.Code != 404 {
		t.Errorf("unknown id: %d, want the origin's 404", w.Code)
	}
	rt := h.(*route)
	if _, ok := rt.slots.Load("/public/documents/gone/detail"); ok {
		t.Error("a path whose answer was not kept still has a slot")
	}
	for i := range 20 {
		get(string(rune('c' + i)))
	}
	if used := c.paths.used.Load(); used > budget || used <= 0 {
		t.Errorf("kept answers use %d bytes, want at most the budget of %d", used, budget)
	}
	var kept int64
	rt.slots.Range(func(_, v any) bool {
		if e := v.(*slot).cur.Load(); e != nil {
			kept += e.size
		}
		return true
	})
	if kept != c.paths.used.Load() {
		t.Errorf("the entries hold %d bytes, the count says %d", kept, c.paths.used.Load())
	}
}

// The service is asked for the path the client asked for, as the reverse
// proxy would forward it: an escaped '%' stays escaped, so that
// /public/medias/a%2541 is the media "a%41" (unknown), never the media
// "aA" kept under a key of its own.
func TestPathIsForwardedAsReceived(t *testing.T) {
	t.Parallel()
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	h := New(time.Hour, Limits{MaxBody: 1 << 20, MaxTotal: 1 << 30, MaxQueryTotal: 1 << 30}).Route(Origin{Target: u, Transport: srv.Client().Transport,
		Fail: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(502) }}, nil)
	for _, tt := range []struct{ target, want string }{
		{"/public/medias/a%2541", "/public/medias/a%41"},
		{"/public/medias/a%41", "/public/medias/aA"},
		{"/public/documents/x%252F..%252Fy/detail", "/public/documents/x%2F..%2Fy/detail"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", tt.target, nil))
		if p := got.Load(); p != tt.want {
			t.Errorf("GET %s: the service was asked for %q, want %q", tt.target, p, tt.want)
		}
	}
}

// Requests that waited for another request's revalidation, which failed
// or brought nothing to keep (a problem, a 404, an upstream hanging up),
// are handed to next at once, side by side, instead of revalidating one
// after the other behind the path's lock (a queue as long as the upstream
// is slow to fail); they ask for a revalidated answer, as the revalidation
// did.
func TestWaitersDoNotQueueBehindAFailedRevalidation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		kept     bool // an answer was kept, then a write went through the gateway
		failure  func(o *origin)
		wantCode int // of the request that revalidates
	}{
		{"nothing kept, a problem", false, func(o *origin) { o.status = http.StatusServiceUnavailable }, 503},
		{"kept, a write, a problem", true, func(o *origin) { o.status = http.StatusServiceUnavailable }, 503},
		{"kept, a write, the upstream hangs up", true, func(o *origin) { o.hangUp = true }, http.StatusBadGateway},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, time.Hour)
			if tt.kept {
				f.get(t, "GET", "/public/documents")
				f.cache.Invalidate()
			}
			asked := f.origin.requests.Load()
			release := make(chan struct{})
			f.origin.set(func(o *origin) { tt.failure(o); o.delay = release })
			first := make(chan int, 1)
			go func() { first <- f.get(t, "GET", "/public/documents").Code }()
			for f.origin.requests.Load() == asked {
				time.Sleep(time.Millisecond)
			}
			const waiters = 4
			codes := make(chan *httptest.ResponseRecorder, waiters)
			for range waiters {
				go func() { codes <- f.get(t, "GET", "/public/documents") }()
			}
			time.Sleep(20 * time.Millisecond) // let them reach the path's lock
			close(release)                    // the revalidation fails, and so would any other
			if c := <-first; c != tt.wantCode {
				t.Errorf("the revalidating request: %d, want %d", c, tt.wantCode)
			}
			deadline := time.After(5 * time.Second)
			for range waiters {
				select {
				case w := <-codes:
					if w.Code != http.StatusTeapot {
						t.Errorf("a waiting request: %d, want it handed to next (%d)", w.Code, http.StatusTeapot)
					}
				case <-deadline:
					t.Fatalf("waiting requests queue behind the path's lock: %d of %d went to next, the origin asked %d times",
						f.next.Load(), waiters, f.origin.requests.Load()-asked)
				}
			}
			if cc := f.nextCacheControl.Load(); cc != "no-cache" {
				t.Errorf("a waiting request went to next with Cache-Control %q, want no-cache", cc)
			}
		})
	}
}

// An entry dropped to make room while its path was being revalidated is
// not kept by that revalidation: the count of kept bytes stays the sum of
// the entries the cache holds.
func TestDroppedWhileRevalidatingStaysDropped(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	bodies := map[string]string{"/public/documents/a/detail": `"a"`, "/public/documents/x/detail": `"` + strings.Repeat("x", 496) + `"`}
	var block chan struct{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		body, wait := bodies[r.URL.Path], block
		mu.Unlock()
		if wait != nil && strings.Contains(r.URL.Path, "/a/") {
			<-wait
		}
		w.Header().Set("ETag", `"`+strconv.Itoa(len(body))+`"`)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	// Room for x (498 bytes counted twice, its key and the overhead) but
	// not beside the first a.
	const budget = entryOverhead + 1500
	c := New(time.Nanosecond, Limits{MaxBody: 1 << 20, MaxTotal: budget, MaxQueryTotal: budget})
	h := c.Route(Origin{Target: u, Transport: srv.Client().Transport,
		Fail: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(502) }}, nil)
	get := func(id string) {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/public/documents/"+id+"/detail", nil))
	}
	get("a") // kept: 2 × 3 bytes, the key and the overhead
	mu.Lock()
	block = make(chan struct{})
	bodies["/public/documents/a/detail"] = `"` + strings.Repeat("a", 198) + `"`
	mu.Unlock()
	done := make(chan struct{})
	go func() { defer close(done); get("a") }() // revalidates, and waits for the origin
	for {
		rt := h.(*route)
		v, _ := rt.slots.Load("/public/documents/a/detail")
		if s, ok := v.(*slot); ok && !s.renew.TryLock() {
			break
		} else if ok {
			s.renew.Unlock()
		}
		time.Sleep(time.Millisecond)
	}
	get("x") // 2 × 498 bytes, the key and the overhead: "a" is dropped to make room
	close(block)
	<-done
	var kept int64
	h.(*route).slots.Range(func(_, v any) bool {
		if e := v.(*slot).cur.Load(); e != nil {
			kept += e.size
		}
		return true
	})
	if used := c.paths.used.Load(); used != kept || used > budget {
		t.Errorf("the entries hold %d bytes, the count says %d (budget %d)", kept, used, budget)
	}
}

// syncOrigin stands in for the catalog's sync feed: each cursor has its
// own page (which names it), under an ETag of its own.
type syncOrigin struct {
	mu       sync.Mutex
	version  int // part of every page and ETag: a change of the library
	pad      int // bytes of padding in each page
	requests atomic.Int64
	queries  []string // RawQuery of each request, in order
}

func (o *syncOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o.requests.Add(1)
	o.mu.Lock()
	o.queries = append(o.queries, r.URL.RawQuery)
	version, pad := o.version, o.pad
	o.mu.Unlock()
	cursor := r.URL.Query().Get("cursor")
	etag := `"` + cursor + "-" + strconv.Itoa(version) + `"`
	w.Header().Set("ETag", etag)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := `{"asked":"` + cursor + `","cursor":"` + cursor + `+` + strconv.Itoa(version) + `","pad":"` + strings.Repeat("x", pad) + `"}`
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = io.WriteString(w, body)
}

func (o *syncOrigin) lastQuery() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.queries[len(o.queries)-1]
}

func newSyncRoute(t *testing.T, c *Cache, o *syncOrigin, next http.Handler) http.Handler {
	t.Helper()
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return c.RouteByQuery(Origin{Target: u, Transport: srv.Client().Transport,
		Fail: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(502) }}, "cursor", next)
}

func serve(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A route keyed by query keeps one answer per cursor (and one without),
// each the service's answer to that very URL, and revalidates each with
// its own ETag and query.
func TestKeyedByQuery(t *testing.T) {
	t.Parallel()
	o := &syncOrigin{}
	c := New(time.Hour, Limits{MaxBody: 1 << 20, MaxTotal: 1 << 30, MaxQueryTotal: 1 << 30})
	h := newSyncRoute(t, c, o, nil)
	for range 2 {
		for _, cursor := range []string{"", "a", "b"} {
			target := "/public/sync"
			if cursor != "" {
				target += "?cursor=" + cursor
			}
			w := serve(h, "GET", target)
			want := `{"asked":"` + cursor + `","cursor":"` + cursor + `+0"`
			if w.Code != 200 || !strings.HasPrefix(w.Body.String(), want) || w.Header().Get("ETag") != `"`+cursor+`-0"` {
				t.Fatalf("GET %s: %d %q %q, want the page of that cursor", target, w.Code, w.Body, w.Header().Get("ETag"))
			}
		}
	}
	if n := o.requests.Load(); n != 3 {
		t.Errorf("origin asked %d times for three URLs asked twice each, want 3", n)
	}
	if w := serve(h, "HEAD", "/public/sync?cursor=a"); w.Code != 200 || w.Body.Len() != 0 || o.requests.Load() != 3 {
		t.Errorf("HEAD of a kept page: %d %q, origin asked %d times", w.Code, w.Body, o.requests.Load())
	}

	// Revalidation asks for the same URL, with the kept page's ETag.
	c.Invalidate()
	if w := serve(h, "GET", "/public/sync?cursor=b"); w.Code != 200 || o.lastQuery() != "cursor=b" {
		t.Errorf("revalidation: %d, the origin was asked with the query %q", w.Code, o.lastQuery())
	}
	o.mu.Lock()
	o.version = 1
	o.mu.Unlock()
	c.Invalidate()
	if w := serve(h, "GET", "/public/sync?cursor=a"); !strings.Contains(w.Body.String(), `"cursor":"a+1"`) || w.Header().Get("ETag") != `"a-1"` {
		t.Errorf("after a change: %q %q, want the new page of cursor a", w.Body, w.Header().Get("ETag"))
	}
}

// Only a query that is the parameter alone is kept: any other goes to
// next, so that the keys of one answer cannot be multiplied.
func TestKeyedByQueryOtherQueriesGoToNext(t *testing.T) {
	t.Parallel()
	o := &syncOrigin{}
	var next atomic.Int64
	h := newSyncRoute(t, New(time.Hour, Limits{MaxBody: 1 << 20, MaxTotal: 1 << 30, MaxQueryTotal: 1 << 30}), o,
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { next.Add(1); w.WriteHeader(http.StatusTeapot) }))
	for _, target := range []string{
		"/public/sync?cursor=a&x=1", "/public/sync?x=1&cursor=a", "/public/sync?cursor=a&cursor=b",
		"/public/sync?x=1", "/public/sync?cursor=a;x=1", "/public/sync?cursorx=a",
	} {
		if w := serve(h, "GET", target); w.Code != http.StatusTeapot {
			t.Errorf("GET %s: %d, want it handed to next", target, w.Code)
		}
	}
	if o.requests.Load() != 0 {
		t.Error("the cache asked the origin for a query it does not key by")
	}
}

// The answers kept by query have a budget of their own: a flood of made-up
// cursors, however small their pages, stays within it and never pushes out
// the answers kept by path.
func TestKeyedByQueryHasABudgetOfItsOwn(t *testing.T) {
	t.Parallel()
	const budget = 10 * (entryOverhead + 100)
	c := New(time.Hour, Limits{MaxBody: 1 << 20, MaxTotal: 1 << 30, MaxQueryTotal: budget})
	f := &origin{body: `[{"id":"a"}]`, etag: `"v1"`}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	listing := c.Route(Origin{Target: u, Transport: srv.Client().Transport,
		Fail: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(502) }}, nil)
	serve(listing, "GET", "/public/documents")

	o := &syncOrigin{}
	h := newSyncRoute(t, c, o, nil)
	for i := range 200 {
		if w := serve(h, "GET", "/public/sync?cursor="+strconv.Itoa(i)); w.Code != 200 {
			t.Fatalf("cursor %d: %d", i, w.Code)
		}
	}
	if used := c.queries.used.Load(); used > budget || used < entryOverhead {
		t.Errorf("sync pages use %d bytes, want at most their budget of %d (and each at least %d)", used, budget, entryOverhead)
	}
	var kept int
	h.(*route).slots.Range(func(_, v any) bool {
		if v.(*slot).cur.Load() != nil {
			kept++
		}
		return true
	})
	if kept > 10 {
		t.Errorf("%d tiny pages kept within room for 10", kept)
	}
	serve(listing, "GET", "/public/documents")
	if n := f.requests.Load(); n != 1 {
		t.Errorf("the listing was asked for %d times: the sync pages pushed it out", n)
	}
}
