// Package microcache keeps the upstream's latest answer to a few hot public
// GET routes in the gateway's memory for a very short time
// ("micro-caching"). Within that time the gateway answers from memory,
// without a hop to the service. After it, one request revalidates the answer
// with the service through its ETag (If-None-Match: a 304 costs the service
// one header check) while the others are still answered from memory
// (stale-while-revalidate).
//
// Only complete 200 answers with an ETag and a known length are kept; any
// other answer is passed through as it came and kept nowhere. A back-office
// write through the gateway calls Invalidate, so the next read revalidates
// first: a client reads its own writes through the same gateway replica.
package microcache

import (
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/doclib/libs/httpx"
)

// Cache holds the settings shared by every cached route and the generation
// that Invalidate moves.
type Cache struct {
	ttl     time.Duration
	maxBody int64
	gen     atomic.Uint64
}

// New returns a cache whose entries are served for ttl before they are
// revalidated; answers longer than maxBody bytes are passed through.
func New(ttl time.Duration, maxBody int64) *Cache {
	return &Cache{ttl: ttl, maxBody: maxBody}
}

// Invalidate makes every entry revalidate with its upstream before it is
// served again.
func (c *Cache) Invalidate() { c.gen.Add(1) }

// Origin is where a cached route's answers come from.
type Origin struct {
	// Target is the service's base URL; the request's path is appended.
	Target *url.URL
	// Transport makes the revalidation requests (the proxies' transport).
	Transport http.RoundTripper
	// Fail answers a request whose revalidation failed in transport, the
	// way the route's reverse proxy answers the same failure.
	Fail func(w http.ResponseWriter, r *http.Request, err error)
}

// Route returns the handler of one route with a fixed path: GET and HEAD
// requests without a query string are answered from the cache, anything
// else goes to next (the route's reverse proxy).
func (c *Cache) Route(o Origin, next http.Handler) http.Handler {
	return &route{cache: c, origin: o, next: next}
}

type route struct {
	cache  *Cache
	origin Origin
	next   http.Handler

	cur   atomic.Pointer[entry]
	renew sync.Mutex
}

// entry is one kept answer. It is never changed once stored: a
// revalidation stores a copy.
type entry struct {
	header  http.Header // as the upstream sent it, minus what the gateway sets itself
	length  []string    // Content-Length
	body    []byte
	etag    string
	gen     uint64    // the Cache generation it was confirmed in
	checked time.Time // when the upstream last confirmed it
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (r.Method != http.MethodGet && r.Method != http.MethodHead) || r.URL.RawQuery != "" {
		rt.next.ServeHTTP(w, r)
		return
	}
	e, res, err := rt.get(r)
	switch {
	case err != nil:
		rt.origin.Fail(w, r, err)
	case res != nil:
		passThrough(w, r, res)
	default:
		e.write(w, r)
	}
}

// get returns a fresh enough entry, or the upstream's answer that could not
// be kept, or the transport error of the revalidation.
func (rt *route) get(r *http.Request) (*entry, *http.Response, error) {
	e := rt.cur.Load()
	if rt.fresh(e) {
		return e, nil, nil
	}
	if !rt.renew.TryLock() {
		if e != nil && e.gen == rt.cache.gen.Load() {
			// Another request is revalidating it: whatever its age, this
			// answer is as fresh as the service's answer to that request
			// will be, give or take how long the service takes, which can
			// be seconds when it re-reads a large listing.
			return e, nil, nil
		}
		rt.renew.Lock()
	}
	defer rt.renew.Unlock()
	if e = rt.cur.Load(); rt.fresh(e) {
		return e, nil, nil // revalidated while this one waited
	}
	return rt.revalidate(r, e)
}

func (rt *route) fresh(e *entry) bool {
	return e != nil && e.gen == rt.cache.gen.Load() && time.Since(e.checked) < rt.cache.ttl
}

// revalidate asks the upstream for the route's answer, conditionally when
// an entry exists, and stores what it can keep.
func (rt *route) revalidate(r *http.Request, old *entry) (*entry, *http.Response, error) {
	// Read before asking: an Invalidate while the request is in flight
	// leaves the stored entry due for another revalidation.
	gen := rt.cache.gen.Load()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, rt.origin.Target.JoinPath(r.URL.Path).String(), nil)
	if err != nil {
		return nil, nil, err
	}
	if id := r.Header.Get(httpx.RequestIDHeader); id != "" {
		req.Header.Set(httpx.RequestIDHeader, id)
	}
	if old != nil {
		req.Header.Set("If-None-Match", old.etag)
	}
	otel.GetTextMapPropagator().Inject(r.Context(), propagation.HeaderCarrier(req.Header))
	res, err := rt.origin.Transport.RoundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case res.StatusCode == http.StatusNotModified && old != nil:
		_ = res.Body.Close()
		e := *old
		e.gen, e.checked = gen, time.Now()
		rt.cur.Store(&e)
		return &e, nil, nil
	case res.StatusCode == http.StatusOK && res.Header.Get("ETag") != "" &&
		res.ContentLength >= 0 && res.ContentLength <= rt.cache.maxBody:
		body := make([]byte, res.ContentLength)
		_, err := io.ReadFull(res.Body, body)
		_ = res.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		e := &entry{
			header: kept(res.Header), length: []string{strconv.Itoa(len(body))}, body: body,
			etag: res.Header.Get("ETag"), gen: gen, checked: time.Now(),
		}
		rt.cur.Store(e)
		return e, nil, nil
	default:
		return nil, res, nil
	}
}

// write answers r from e, with a 304 when r's If-None-Match matches.
func (e *entry) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if httpx.ETagMatch(r.Header.Get("If-None-Match"), e.etag) {
		for _, k := range notModifiedHeaders {
			if v, ok := e.header[k]; ok {
				h[k] = v
			}
		}
		w.WriteHeader(http.StatusNotModified)
		return
	}
	for k, v := range e.header {
		h[k] = v
	}
	h["Content-Length"] = e.length
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(e.body)
	}
}

// notModifiedHeaders are the headers a 304 repeats (RFC 9110 §15.4.5).
var notModifiedHeaders = []string{"Cache-Control", "Content-Location", "Etag", "Expires", "Last-Modified", "Vary"}

// passThrough answers r with an upstream answer that was not kept.
func passThrough(w http.ResponseWriter, r *http.Request, res *http.Response) {
	defer res.Body.Close()
	h := w.Header()
	for k, v := range kept(res.Header) {
		h[k] = v
	}
	if res.ContentLength >= 0 {
		h.Set("Content-Length", strconv.FormatInt(res.ContentLength, 10))
	}
	w.WriteHeader(res.StatusCode)
	if r.Method != http.MethodHead {
		_, _ = io.Copy(w, res.Body)
	}
}

// kept returns the upstream headers the gateway repeats: not the hop-by-hop
// ones (RFC 9110 §7.6.1), not those it sets itself on every answer, and not
// the length, which it writes itself.
func kept(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		// Entries share these slices with every response that repeats
		// them: clipped, an Add to a response's header reallocates
		// instead of writing into the shared array.
		out[k] = slices.Clip(v)
	}
	for _, f := range h.Values("Connection") {
		for _, name := range strings.Split(f, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for _, k := range dropped {
		out.Del(k)
	}
	return out
}

var dropped = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
	"Content-Length", "Date", httpx.RequestIDHeader, "X-Content-Type-Options",
}
