// Package microcache keeps the upstream's latest answers to the hot public
// JSON reads (the listing, a detail, the tag categories, a media record,
// the public settings, a sync page) in the gateway's memory for a very
// short time ("micro-caching"). Within that time the gateway answers from
// memory, without a hop to the service. After it, one request per key
// revalidates the answer with the service through its ETag (If-None-Match:
// a 304 costs the service one header check) while the others are still
// answered from memory (stale-while-revalidate).
//
// Answers are kept by path; a route keyed by a query parameter as well
// (RouteByQuery: the sync feed's cursor) keeps one answer per path and
// value of that parameter.
//
// Each kept answer is a rendering.Rendering of the service's identity body
// under the service's ETag, so the gateway answers exactly as the service
// would: the same ETags (one per encoding, derived from the service's),
// gzip, zstd and br made once per answer, 304 for any of them, HEAD
// without a body. Encodings never mix: the service is always asked for the
// identity body, and each client gets the encoding it accepts. A kept body
// is always one answer of the service, whole: the gateway never composes
// one, so what it says (a sync page's documents and its cursor) holds
// together as the service made it.
//
// Only complete 200 answers with an ETag, a known length and no
// Content-Encoding are kept; any other answer is passed through as it came
// and kept nowhere, and the requests that waited for it go on to the
// service side by side (through next), not one after the other. Memory is
// bounded: an answer over MaxBody is never kept, and when the kept answers
// of the routes keyed by path pass MaxTotal (or those of the routes keyed
// by query pass MaxQueryTotal), others of the same kind are dropped (any,
// cheaply) to make room. Each answer counts its body twice (room for its
// compressed forms) plus what keeping it costs besides (entryOverhead), so
// many tiny answers are bounded too. A back-office write through the
// gateway calls Invalidate, so the next read of every key revalidates
// first, with Cache-Control: no-cache so that whichever service replica
// answers compares its revision first: a client reads its own writes
// through the same gateway replica.
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
	ttl     time.Duration
	maxBody int64
	gen     atomic.Uint64
	// paths bounds the answers of the routes keyed by path, queries those
	// of the routes keyed by a query parameter. They are apart because
	// anyone can make up cursors by the thousand, each a valid key with an
	// answer of its own: such a flood pushes out only other sync pages,
	// never the listing or the details.
	paths, queries *budget
}

// Limits bound the memory of a Cache.
type Limits struct {
	// MaxBody is the largest answer kept, in bytes; a longer one passes
	// through.
	MaxBody int64
	// MaxTotal is about the most the answers of the routes keyed by path
	// (Route) use together, MaxQueryTotal the same for the routes keyed by
	// a query parameter (RouteByQuery).
	MaxTotal, MaxQueryTotal int64
}

// budget is the memory some routes' kept answers share.
type budget struct {
	max    int64
	used   atomic.Int64 // bytes of the kept answers of routes
	mu     sync.Mutex   // guards routes (added at start-up)
	routes []*route
}

// entryOverhead is about what keeping an answer costs beside its bodies
// and its key (the entry, its rendering with the ETag of each encoding,
// the slot, the map's node: about 1.35 KiB, measured as the live heap
// over 20,000 empty answers kept), counted so that a budget bounds many small answers
// (empty sync pages under made-up cursors) as well as a few large ones.
const entryOverhead = 1536

// New returns a cache whose entries are served for ttl before they are
// revalidated, within limits.
func New(ttl time.Duration, limits Limits) *Cache {
	return &Cache{ttl: ttl, maxBody: limits.MaxBody,
		paths: &budget{max: limits.MaxTotal}, queries: &budget{max: limits.MaxQueryTotal}}
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
	return c.route(o, "", c.paths, next)
}

// RouteByQuery returns the handler of a route whose answers depend on the
// query parameter param (the sync feed's cursor): GET and HEAD requests
// without a query, or whose query is param alone (param=value), are
// answered from the cache, one entry per path and query; anything else
// (another parameter, param twice) goes to next, so that the keys of one
// answer cannot be multiplied by parameters the service ignores.
func (c *Cache) RouteByQuery(o Origin, param string, next http.Handler) http.Handler {
	return c.route(o, param, c.queries, next)
}

func (c *Cache) route(o Origin, param string, b *budget, next http.Handler) http.Handler {
	rt := &route{cache: c, origin: o, param: param, budget: b, next: next}
	b.mu.Lock()
	b.routes = append(b.routes, rt)
	b.mu.Unlock()
	return rt
}

type route struct {
	cache  *Cache
	origin Origin
	param  string  // the query parameter of the key; "" keys by path alone
	budget *budget // the memory its answers share
	next   http.Handler
	slots  sync.Map // key -> *slot
}

// key is what r's answer is kept under, and whether it is kept at all.
func (rt *route) key(r *http.Request) (string, bool) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return "", false
	}
	q := r.URL.RawQuery
	switch {
	case q == "":
		return r.URL.Path, true
	case rt.param != "" && strings.HasPrefix(q, rt.param+"=") && !strings.ContainsAny(q, "&;"):
		return r.URL.Path + "?" + q, true
	}
	return "", false
}

// slot is one key's kept answer and the lock of its revalidation.
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
	size         int64     // bytes counted against its route's budget
	gen          uint64    // the Cache generation it was confirmed in
	checked      time.Time // when the upstream was last asked and confirmed it
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key, ok := rt.key(r)
	if !ok {
		rt.next.ServeHTTP(w, r)
		return
	}
	e, res, err := rt.get(key, r)
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

// get returns a fresh enough entry for key (r's path, and its query on a
// route keyed by query), or the upstream's answer that could not be kept,
// or the transport error of the revalidation, or nothing when r waited for
// another request's revalidation and it kept nothing (r then goes to
// next).
func (rt *route) get(key string, r *http.Request) (*entry, *http.Response, error) {
	v, ok := rt.slots.Load(key)
	if !ok {
		v, _ = rt.slots.LoadOrStore(key, &slot{})
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
	ne, res, err := rt.revalidate(key, r, e)
	s.failed = ne == nil
	switch {
	case ne != nil:
		rt.keep(key, s, ne)
	case res != nil:
		// The upstream has no answer to keep (a 404 for a deleted
		// document, a problem): the key is forgotten.
		rt.drop(key, s)
	case e == nil:
		rt.slots.CompareAndDelete(key, s) // no slot per unknown id
	}
	return ne, res, err
}

func (rt *route) fresh(e *entry) bool {
	return e != nil && e.gen == rt.cache.gen.Load() && time.Since(e.checked) < rt.cache.ttl
}

// keep stores ne in key's slot s, counts its memory, and makes room if
// the kept answers pass the budget. Entries are swapped in and out, and
// each swap counts exactly what it put or took, so the count stays the sum
// of the entries held whatever runs at the same time.
func (rt *route) keep(key string, s *slot, ne *entry) {
	old := s.cur.Swap(ne)
	delta := ne.size
	if old != nil {
		delta -= old.size
	}
	used := rt.budget.used.Add(delta)
	if v, ok := rt.slots.Load(key); !ok || v != s {
		// Dropped to make room while it was revalidated: the slot is no
		// longer reachable, so it must hold nothing.
		if x := s.cur.Swap(nil); x != nil {
			rt.budget.used.Add(-x.size)
		}
		return
	}
	if used > rt.budget.max {
		rt.budget.evict(s)
	}
}

// drop forgets key's entry: first the slot (so that a keep running at the
// same time sees it gone), then what it holds.
func (rt *route) drop(key string, s *slot) {
	rt.slots.CompareAndDelete(key, s)
	if old := s.cur.Swap(nil); old != nil {
		rt.budget.used.Add(-old.size)
	}
}

// evict drops kept answers of b's routes, in no particular order (map
// order is random), until the total is within the budget; keep is never
// dropped.
func (b *budget) evict(keep *slot) {
	b.mu.Lock()
	routes := b.routes
	b.mu.Unlock()
	for _, rt := range routes {
		rt.slots.Range(func(k, v any) bool {
			if s := v.(*slot); s != keep {
				rt.drop(k.(string), s)
			}
			return b.used.Load() > b.max
		})
		if b.used.Load() <= b.max {
			return
		}
	}
}

// revalidate asks the upstream for the answer to r's path and query (kept
// under key), conditionally when an entry exists. It returns the entry to keep, or the answer that
// cannot be kept.
func (rt *route) revalidate(key string, r *http.Request, old *entry) (*entry, *http.Response, error) {
	// Read before asking: an Invalidate while the request is in flight
	// leaves the stored entry due for another revalidation.
	gen := rt.cache.gen.Load()
	// The path and query as the client sent them, as the reverse proxy
	// forwards them (not cleaned, an escaped '%' kept escaped): the key
	// and what the service answers for must be the same.
	u := *rt.origin.Target
	u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/")+r.URL.Path, ""
	u.RawQuery = r.URL.RawQuery
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
		// A back-office write went through this gateway since the answer
		// was confirmed (or nothing is known of it): the service replica
		// that answers may not be the one that took the write, so it must
		// compare its revision now instead of within its public lag, for
		// the author to read the write at once.
		req.Header.Set("Cache-Control", "no-cache")
	}
	otel.GetTextMapPropagator().Inject(r.Context(), propagation.HeaderCarrier(req.Header))
	// The answer is as fresh as the moment it was asked for (RFC 9111
	// §4.2.3 counts the response's delay in its age): its time to live
	// counts from then, so no answer is served longer than ttl after the
	// service confirmed it, however long the service took to answer.
	asked := time.Now()
	res, err := rt.origin.Transport.RoundTrip(req)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case res.StatusCode == http.StatusNotModified && old != nil:
		_ = res.Body.Close()
		e := *old
		e.gen, e.checked = gen, asked
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
			// The identity body, room for its compressed forms, and what
			// keeping it costs besides.
			size: 2*int64(len(body)) + entryOverhead + int64(len(key)), gen: gen, checked: asked,
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
