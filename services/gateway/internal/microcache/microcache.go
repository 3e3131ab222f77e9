// Package microcache keeps the upstream's latest answers to the hot public
// JSON reads (the listing, a detail, the tag categories, a media record) in
// the gateway's memory for a very short time ("micro-caching"). Within that
// time the gateway answers from memory, without a hop to the service. After
// it, one request per path revalidates the answer with the service through
// its ETag (If-None-Match: a 304 costs the service one header check) while
// the others are still answered from memory (stale-while-revalidate).
//
// Each kept answer is a rendering.Rendering of the service's identity body
// under the service's ETag, so the gateway answers exactly as the service
// would: the same ETags (one per encoding, derived from the service's),
// gzip, zstd and br made once per answer, 304 for any of them, HEAD
// without a body. Encodings never mix: the service is always asked for the
// identity body, and each client gets the encoding it accepts.
//
// Only complete 200 answers with an ETag, a known length and no
// Content-Encoding are kept; any other answer is passed through as it came
// and kept nowhere, and the requests that waited for it go on to the
// service side by side (through next), not one after the other. Memory is bounded: an answer over maxBody is never
// kept, and when the kept answers of every path together pass maxTotal,
// others are dropped (any, cheaply) to make room. A back-office write
// through the gateway calls Invalidate, so the next read of every path
// revalidates first, with Cache-Control: no-cache so that whichever
// service replica answers compares its revision first: a client reads its
// own writes through the same gateway replica.
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
	"github.com/doclib/libs/rendering"
)

// Cache holds the settings shared by every cached route, the generation
// that Invalidate moves, and the memory the kept answers use.
type Cache struct {
	ttl      time.Duration
	maxBody  int64
	maxTotal int64
	gen      atomic.Uint64
	used     atomic.Int64 // bytes of the kept answers, over every route
	routes   []*route
	mu       sync.Mutex // guards routes (added at start-up)
}

// New returns a cache whose entries are served for ttl before they are
// revalidated; answers longer than maxBody bytes are passed through, and
// the kept answers use at most about maxTotal bytes together.
func New(ttl time.Duration, maxBody, maxTotal int64) *Cache {
	return &Cache{ttl: ttl, maxBody: maxBody, maxTotal: maxTotal}
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

// Route returns the handler of one route (a path pattern such as
// /public/documents/:id/detail): GET and HEAD requests without a query
// string are answered from the cache, one entry per path, anything else
// goes to next (the route's reverse proxy).
func (c *Cache) Route(o Origin, next http.Handler) http.Handler {
	rt := &route{cache: c, origin: o, next: next}
	c.mu.Lock()
	c.routes = append(c.routes, rt)
	c.mu.Unlock()
	return rt
}

type route struct {
	cache  *Cache
	origin Origin
	next   http.Handler
	slots  sync.Map // path -> *slot
}

// slot is one path's kept answer and the lock of its revalidation.
type slot struct {
	cur   atomic.Pointer[entry]
	renew sync.Mutex
	// failed says the last revalidation kept nothing; guarded by renew.
	failed bool
}

// entry is one kept answer. It is never changed once stored: a
// revalidation stores a copy.
type entry struct {
	r            *rendering.Rendering
	header       http.Header // the upstream's other headers, as it sent them
	cacheControl string
	size         int64     // bytes counted against maxTotal
	gen          uint64    // the Cache generation it was confirmed in
	checked      time.Time // when the upstream last confirmed it
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
	case e != nil:
		e.write(w, r)
	default:
		rt.next.ServeHTTP(w, r)
	}
}

// get returns a fresh enough entry for r's path, or the upstream's answer
// that could not be kept, or the transport error of the revalidation, or
// nothing when r waited for another request's revalidation and it kept
// nothing (r then goes to next).
func (rt *route) get(r *http.Request) (*entry, *http.Response, error) {
	path := r.URL.Path
	v, ok := rt.slots.Load(path)
	if !ok {
		v, _ = rt.slots.LoadOrStore(path, &slot{})
	}
	s := v.(*slot)
	e := s.cur.Load()
	if rt.fresh(e) {
		return e, nil, nil
	}
	if !s.renew.TryLock() {
		if e != nil && e.gen == rt.cache.gen.Load() {
			// Another request is revalidating it: whatever its age, this
			// answer is as fresh as the service's answer to that request
			// will be, give or take how long the service takes, which can
			// be seconds when it re-reads a large listing.
			return e, nil, nil
		}
		gen := rt.cache.gen.Load()
		s.renew.Lock()
		e = s.cur.Load()
		switch {
		case e == nil || s.failed:
			// The revalidation this one waited for failed or kept nothing
			// (a problem, a 404, an upstream that does not answer): rather
			// than each waiting request asking in turn, behind the lock,
			// they all go to next at once, asking the service for a
			// revalidated answer as the revalidation did.
			s.renew.Unlock()
			r.Header.Set("Cache-Control", "no-cache")
			return nil, nil, nil
		case e.gen >= gen:
			// Confirmed while this one waited, by a revalidation that
			// began after the last write through here that it must see.
			s.renew.Unlock()
			return e, nil, nil
		}
	}
	defer s.renew.Unlock()
	if e = s.cur.Load(); rt.fresh(e) {
		return e, nil, nil // revalidated while this one waited
	}
	ne, res, err := rt.revalidate(r, e)
	s.failed = ne == nil
	switch {
	case ne != nil:
		rt.keep(path, s, ne)
	case res != nil:
		// The upstream has no answer to keep (a 404 for a deleted
		// document, a problem): the path is forgotten.
		rt.drop(path, s)
	case e == nil:
		rt.slots.CompareAndDelete(path, s) // no slot per unknown id
	}
	return ne, res, err
}

func (rt *route) fresh(e *entry) bool {
	return e != nil && e.gen == rt.cache.gen.Load() && time.Since(e.checked) < rt.cache.ttl
}

// keep stores ne in path's slot s, counts its memory, and makes room if
// the kept answers pass the budget. Entries are swapped in and out, and
// each swap counts exactly what it put or took, so the count stays the sum
// of the entries held whatever runs at the same time.
func (rt *route) keep(path string, s *slot, ne *entry) {
	old := s.cur.Swap(ne)
	delta := ne.size
	if old != nil {
		delta -= old.size
	}
	used := rt.cache.used.Add(delta)
	if v, ok := rt.slots.Load(path); !ok || v != s {
		// Dropped to make room while it was revalidated: the slot is no
		// longer reachable, so it must hold nothing.
		if x := s.cur.Swap(nil); x != nil {
			rt.cache.used.Add(-x.size)
		}
		return
	}
	if used > rt.cache.maxTotal {
		rt.cache.evict(s)
	}
}

// drop forgets path's entry: first the slot (so that a keep running at the
// same time sees it gone), then what it holds.
func (rt *route) drop(path string, s *slot) {
	rt.slots.CompareAndDelete(path, s)
	if old := s.cur.Swap(nil); old != nil {
		rt.cache.used.Add(-old.size)
	}
}

// evict drops kept answers, in no particular order (map order is random),
// until the total is within the budget; keep is never dropped.
func (c *Cache) evict(keep *slot) {
	c.mu.Lock()
	routes := c.routes
	c.mu.Unlock()
	for _, rt := range routes {
		rt.slots.Range(func(k, v any) bool {
			if s := v.(*slot); s != keep {
				rt.drop(k.(string), s)
			}
			return c.used.Load() > c.maxTotal
		})
		if c.used.Load() <= c.maxTotal {
			return
		}
	}
}

// revalidate asks the upstream for the path's answer, conditionally when
// an entry exists. It returns the entry to keep, or the answer that
// cannot be kept.
func (rt *route) revalidate(r *http.Request, old *entry) (*entry, *http.Response, error) {
	// Read before asking: an Invalidate while the request is in flight
	// leaves the stored entry due for another revalidation.
	gen := rt.cache.gen.Load()
	// The path as the client sent it, as the reverse proxy forwards it
	// (not cleaned, an escaped '%' kept escaped): the key (r.URL.Path) and
	// what the service answers for must be the same path.
	u := *rt.origin.Target
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/")+r.URL.Path, ""
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, nil, err
	}
	if id := r.Header.Get(httpx.RequestIDHeader); id != "" {
		req.Header.Set(httpx.RequestIDHeader, id)
	}
	// The identity body is kept, and compressed here for each client as it
	// asks (said outright: a transport would otherwise ask for gzip).
	req.Header.Set("Accept-Encoding", "identity")
	if old != nil {
		req.Header.Set("If-None-Match", old.r.ETag())
	}
	if old == nil || old.gen != gen {
		// A back-office write went through this gateway since the path
		// was confirmed (or nothing is known of it): the service replica
		// that answers may not be the one that took the write, so it must
		// compare its revision now instead of within its public lag, for
		// the author to read the write at once.
		req.Header.Set("Cache-Control", "no-cache")
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
		return &e, nil, nil
	case res.StatusCode == http.StatusOK && res.Header.Get("ETag") != "" && res.Header.Get("Content-Encoding") == "" &&
		res.ContentLength >= 0 && res.ContentLength <= rt.cache.maxBody:
		body := make([]byte, res.ContentLength)
		_, err := io.ReadFull(res.Body, body)
		_ = res.Body.Close()
		if err != nil {
			return nil, nil, err
		}
		header := kept(res.Header)
		for _, k := range rendered {
			header.Del(k)
		}
		return &entry{
			r:      rendering.NewWithETag(res.Header.Get("Content-Type"), body, res.Header.Get("ETag")),
			header: header, cacheControl: res.Header.Get("Cache-Control"),
			// The identity body, and room for its compressed forms.
			size: 2 * int64(len(body)), gen: gen, checked: time.Now(),
		}, nil, nil
	default:
		return nil, res, nil
	}
}

// rendered are the headers rendering.Serve writes itself.
var rendered = []string{"Content-Type", "Etag", "Cache-Control", "Vary", "Content-Encoding"}

// write answers r from e: 304 when r's If-None-Match names one of its
// ETags, otherwise the body in the encoding r accepts.
func (e *entry) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	for k, v := range e.header {
		h[k] = v
	}
	e.r.Serve(w, r, e.cacheControl)
}

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
