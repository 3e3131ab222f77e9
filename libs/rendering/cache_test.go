package rendering

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// store is a fake store: a revision and a count of loads.
type store struct {
	rev     atomic.Int64
	loads   atomic.Int64
	fail    atomic.Bool
	block   chan struct{} // when set, Load waits on it
	revErrs atomic.Bool
}

func (s *store) cache(maxAge time.Duration) *Cache[int64] {
	return &Cache[int64]{
		MaxAge: maxAge,
		Revision: func(context.Context) (int64, error) {
			if s.revErrs.Load() {
				return 0, errors.New("database down")
			}
			return s.rev.Load(), nil
		},
		Load: func(context.Context) (int64, error) {
			if s.block != nil {
				<-s.block
			}
			if s.fail.Load() {
				return 0, errors.New("database down")
			}
			s.loads.Add(1)
			return s.rev.Load(), nil
		},
	}
}

// primed returns a store and a cache of it that has loaded once.
func primed(t *testing.T, maxAge time.Duration) (*store, *Cache[int64]) {
	t.Helper()
	s := &store{}
	c := s.cache(maxAge)
	if _, err := c.Get(context.Background(), time.Hour); err != nil {
		t.Fatal(err)
	}
	return s, c
}

func TestCacheLoadsWhenTheRevisionMoves(t *testing.T) {
	t.Parallel()
	s := &store{}
	c := s.cache(time.Minute)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if v, err := c.Get(ctx, 0); err != nil || v != 0 {
			t.Fatalf("Get = %d, %v", v, err)
		}
	}
	if s.loads.Load() != 1 {
		t.Errorf("%d loads for an unchanged revision, want 1", s.loads.Load())
	}
	s.rev.Store(7) // a write through another replica
	if v, _ := c.Get(ctx, 0); v != 7 {
		t.Errorf("maxLag 0 after the revision moved: %d, want 7", v)
	}
	if s.loads.Load() != 2 {
		t.Errorf("%d loads, want 2", s.loads.Load())
	}
}

// When a Get loads again, from a cache that has loaded once.
func TestCacheLoadsAgain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		maxAge    time.Duration
		before    func(*store, *Cache[int64])
		maxLag    time.Duration
		wantLoads int64
	}{
		{"revision moved, within maxLag", time.Minute, func(s *store, _ *Cache[int64]) { s.rev.Store(1) }, time.Hour, 1},
		{"revision moved, maxLag 0", time.Minute, func(s *store, _ *Cache[int64]) { s.rev.Store(1) }, 0, 2},
		{"invalidated (a write here, its bump lost)", time.Minute, func(_ *store, c *Cache[int64]) { c.Invalidate() }, time.Hour, 2},
		{"past MaxAge", time.Nanosecond, func(*store, *Cache[int64]) { time.Sleep(time.Millisecond) }, time.Hour, 2},
		{"nothing happened", time.Minute, func(*store, *Cache[int64]) {}, 0, 1},
	}
	for _, tt := range tests {
		s, c := primed(t, tt.maxAge)
		tt.before(s, c)
		v, err := c.Get(context.Background(), tt.maxLag)
		if err != nil || s.loads.Load() != tt.wantLoads {
			t.Errorf("%s: %d loads (%v), want %d", tt.name, s.loads.Load(), err, tt.wantLoads)
		}
		if tt.wantLoads == 2 && v != s.rev.Load() {
			t.Errorf("%s: Get = %d, want %d", tt.name, v, s.rev.Load())
		}
	}
}

func TestCacheErrorsKeepItInvalid(t *testing.T) {
	t.Parallel()
	s, c := primed(t, time.Minute)
	ctx := context.Background()
	c.Invalidate()
	s.fail.Store(true)
	if _, err := c.Get(ctx, time.Hour); err == nil {
		t.Fatal("a failed load was not reported")
	}
	s.fail.Store(false)
	s.revErrs.Store(true)
	if _, err := c.Get(ctx, time.Hour); err == nil {
		t.Fatal("a failed revision read was not reported")
	}
	s.revErrs.Store(false)
	if _, err := c.Get(ctx, time.Hour); err != nil || s.loads.Load() != 2 {
		t.Errorf("after the failures: %d loads (%v), want a second load", s.loads.Load(), err)
	}
}

// While one caller loads, callers that accept a lag get the kept value at
// once; a caller asking for maxLag 0 waits for the load.
func TestCacheServesStaleWhileOneLoads(t *testing.T) {
	t.Parallel()
	s, c := primed(t, time.Minute)
	ctx := context.Background()
	s.block = make(chan struct{})
	s.rev.Store(1)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the loader
		defer wg.Done()
		_, _ = c.Get(ctx, 0)
	}()
	for c.renew.TryLock() { // wait until the loader holds the lock
		c.renew.Unlock()
		time.Sleep(time.Millisecond)
	}
	if v, err := c.Get(ctx, time.Nanosecond); err != nil || v != 0 {
		t.Errorf("while loading, a lagging reader got %d (%v), want the kept 0 at once", v, err)
	}
	got := make(chan int64, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		v, _ := c.Get(ctx, 0)
		got <- v
	}()
	select {
	case v := <-got:
		t.Fatalf("a maxLag 0 reader did not wait for the load (got %d)", v)
	case <-time.After(20 * time.Millisecond):
	}
	close(s.block)
	wg.Wait()
	if v := <-got; v != 1 {
		t.Errorf("maxLag 0 reader got %d, want 1", v)
	}
}

func TestMaxLag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cacheControl []string
		want         time.Duration
	}{
		{nil, time.Second},
		{[]string{"no-cache"}, 0},
		{[]string{"No-Cache"}, 0},
		{[]string{"max-age=0"}, 0},
		{[]string{"no-transform, no-cache"}, 0},
		{[]string{"no-transform", "max-age=0"}, 0},
		{[]string{"max-age=60"}, time.Second},
		{[]string{"no-store"}, time.Second},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest(http.MethodGet, "/", nil)
		for _, v := range tt.cacheControl {
			req.Header.Add("Cache-Control", v)
		}
		if got := MaxLag(req, time.Second); got != tt.want {
			t.Errorf("Cache-Control %q: MaxLag = %v, want %v", tt.cacheControl, got, tt.want)
		}
	}
}
