// Package ratelimit owns the per-client rate limits: of the gateway's
// public requests and failed back-office authentications, and of the
// console's failed sign-ins. One token bucket per client key (the client
// IP), kept in a bounded map whose idle entries expire.
package ratelimit

import (
	"math"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// DefaultMaxClients bounds the memory the limiter uses.
const DefaultMaxClients = 100_000

// Limiter limits each client key to a rate with a burst.
type Limiter struct {
	limit      rate.Limit
	burst      int
	ttl        time.Duration
	maxClients int
	now        func() time.Time

	mu        sync.Mutex
	clients   map[string]*client
	lastSweep time.Time
}

type client struct {
	lim  *rate.Limiter
	seen time.Time
}

// New returns a limiter allowing perSecond requests per second and bursts of
// burst requests to each key, tracking at most maxClients keys.
func New(perSecond float64, burst, maxClients int) *Limiter {
	// A bucket idle long enough to have refilled is the same as a new one,
	// so forgetting it then changes nothing.
	ttl := time.Duration(float64(burst) / perSecond * float64(time.Second))
	ttl = max(ttl, 10*time.Second)
	return &Limiter{
		limit: rate.Limit(perSecond), burst: burst, ttl: ttl, maxClients: max(maxClients, 1),
		now: time.Now, clients: map[string]*client{},
	}
}

// Allow takes one token from key's bucket. When the bucket is empty it
// takes nothing and says how long until a token is available.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sweep(now)
	c, found := l.clients[key]
	if !found {
		if len(l.clients) >= l.maxClients {
			l.evictOne()
		}
		c = &client{lim: rate.NewLimiter(l.limit, l.burst)}
		l.clients[key] = c
	}
	c.seen = now
	res := c.lim.ReserveN(now, 1)
	if !res.OK() {
		return false, time.Second
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// Spent reports whether key's bucket is empty, and how long until it holds
// a token again, without taking anything: a caller that counts only
// failures refuses before trying, then takes one (Allow) for a failure.
func (l *Limiter) Spent(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	c, found := l.clients[key]
	if !found {
		return false, 0
	}
	if tokens := c.lim.TokensAt(now); tokens < 1 {
		return true, time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second))
	}
	return false, 0
}

// RetryAfterSeconds renders d as a Retry-After value: whole seconds, at
// least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// Len reports how many keys are tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

func (l *Limiter) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.ttl {
		return
	}
	l.lastSweep = now
	for k, c := range l.clients {
		if now.Sub(c.seen) >= l.ttl {
			delete(l.clients, k)
		}
	}
}

// evictOne forgets an arbitrary key when the map is full of active ones:
// that client merely gets a fresh bucket, and memory stays bounded.
func (l *Limiter) evictOne() {
	for k := range l.clients {
		delete(l.clients, k)
		return
	}
}

// ClientKey is the key of a client address: an IPv4 address as it is, an
// IPv6 address by its /64, because one IPv6 client (a home, a phone) is
// usually handed a whole /64 and could otherwise take a fresh address, and
// a fresh bucket, for every request. Anything that does not parse is its
// own key.
func ClientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is4() {
		return a.String()
	}
	return netip.PrefixFrom(a, 64).Masked().String()
}
