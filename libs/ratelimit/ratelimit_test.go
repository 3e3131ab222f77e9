package ratelimit

import (
	"testing"
	"time"
)

func TestAllow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	l := New(1, 2, 10)
	l.now = func() time.Time { return now }

	for i := range 2 {
		if ok, _ := l.Allow("a"); !ok {
			t.Fatalf("request %d within the burst was refused", i+1)
		}
	}
	ok, retry := l.Allow("a")
	if ok {
		t.Fatal("third request at once was allowed; want refused after a burst of 2")
	}
	if retry <= 0 || retry > time.Second {
		t.Errorf("retryAfter = %v, want in (0, 1s]", retry)
	}
	if ok, _ := l.Allow("b"); !ok {
		t.Error("another client was refused: buckets must be per key")
	}
	now = now.Add(time.Second)
	if ok, _ := l.Allow("a"); !ok {
		t.Error("request one second later was refused; want one token refilled")
	}
}

func TestExpiryAndBound(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	l := New(100, 200, 3)
	l.now = func() time.Time { return now }
	for _, k := range []string{"a", "b", "c", "d"} {
		l.Allow(k)
	}
	if n := l.Len(); n != 3 {
		t.Errorf("Len = %d after 4 keys with a bound of 3, want 3", n)
	}
	now = now.Add(time.Minute)
	l.Allow("e")
	if n := l.Len(); n != 1 {
		t.Errorf("Len = %d after the others expired, want 1", n)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want int
	}{{time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {0, 1}}
	for _, tt := range tests {
		if got := RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

func TestClientKey(t *testing.T) {
	for ip, want := range map[string]string{
		"203.0.113.7":          "203.0.113.7",
		"::ffff:203.0.113.7":   "203.0.113.7",
		"2001:db8::1":          "2001:db8::/64",
		"2001:db8::abcd:1:2:3": "2001:db8::/64",
		"2001:db8:0:1::1":      "2001:db8:0:1::/64",
		"fe80::1%eth0":         "fe80::/64",
		"not an address":       "not an address",
	} {
		if got := ClientKey(ip); got != want {
			t.Errorf("ClientKey(%q) = %q, want %q", ip, got, want)
		}
	}
}

// TestSpent: Spent looks without taking; it is true exactly when Allow
// would refuse, and says for how long.
func TestSpent(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	l := New(0.5, 2, 10) // a token every 2 s
	l.now = func() time.Time { return now }
	for i := range 5 {
		if spent, _ := l.Spent("a"); spent {
			t.Fatalf("look %d: spent before anything was taken", i)
		}
	}
	l.Allow("a")
	l.Allow("a")
	spent, wait := l.Spent("a")
	if !spent || wait != 2*time.Second {
		t.Fatalf("after the burst: spent %v for %v, want true for 2s", spent, wait)
	}
	if ok, _ := l.Allow("a"); ok {
		t.Fatal("Allow took a token Spent said was not there")
	}
	if spent, _ := l.Spent("b"); spent {
		t.Fatal("another key is spent")
	}
	now = now.Add(2 * time.Second)
	if spent, _ := l.Spent("a"); spent {
		t.Fatal("still spent once a token is back")
	}
}
