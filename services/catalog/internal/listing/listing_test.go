package listing

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestCacheRendersOnlyWhenTheRevisionMoves(t *testing.T) {
	var rev, renders, checks atomic.Int64
	c := &Cache{
		Render: func(context.Context) ([]byte, error) {
			renders.Add(1)
			return []byte(fmt.Sprintf("v%d", rev.Load())), nil
		},
		Revision:   func(context.Context) (int64, error) { checks.Add(1); return rev.Load(), nil },
		CheckEvery: time.Hour, MaxAge: time.Hour,
	}
	ctx := context.Background()
	e1, _ := c.Get(ctx)
	e2, _ := c.Get(ctx)
	if string(e1.Body) != "v0" || e1 != e2 || renders.Load() != 1 || checks.Load() != 1 {
		t.Fatalf("second Get within CheckEvery: renders %d, checks %d", renders.Load(), checks.Load())
	}
	rev.Store(1)
	c.Invalidate()
	e3, _ := c.Get(ctx)
	if string(e3.Body) != "v1" || e3.ETag == e1.ETag {
		t.Errorf("after Invalidate: body %s etag %s", e3.Body, e3.ETag)
	}

	c.CheckEvery = 0 // compare the revision every time
	_, _ = c.Get(ctx)
	if renders.Load() != 2 {
		t.Errorf("same revision rendered again: %d renders", renders.Load())
	}
	rev.Store(2) // a write through another replica
	e4, _ := c.Get(ctx)
	if string(e4.Body) != "v2" {
		t.Errorf("revision moved but body is %s", e4.Body)
	}
}

func TestCacheMaxAge(t *testing.T) {
	var renders atomic.Int64
	c := &Cache{
		Render:   func(context.Context) ([]byte, error) { renders.Add(1); return []byte("x"), nil },
		Revision: func(context.Context) (int64, error) { return 7, nil },
		MaxAge:   time.Nanosecond,
	}
	_, _ = c.Get(context.Background())
	time.Sleep(time.Millisecond)
	_, _ = c.Get(context.Background())
	if renders.Load() != 2 {
		t.Errorf("renders = %d, want 2 (entry older than MaxAge)", renders.Load())
	}
}

// A re-read past MaxAge keeps serving the current entry to the others;
// after a write through this replica (Invalidate) they wait instead.
func TestCacheServesWhileOneRereads(t *testing.T) {
	release := make(chan struct{})
	var renders atomic.Int64
	c := &Cache{
		Render: func(context.Context) ([]byte, error) {
			if renders.Add(1) > 1 {
				<-release
			}
			return []byte("x"), nil
		},
		Revision: func(context.Context) (int64, error) { return 7, nil },
		MaxAge:   time.Millisecond,
	}
	first, _ := c.Get(context.Background())
	time.Sleep(2 * time.Millisecond)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = c.Get(context.Background()) }() // re-reads, held
	for renders.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if e, err := c.Get(context.Background()); err != nil || e != first {
		t.Errorf("during a re-read past MaxAge: %v, %v; want the current entry at once", e, err)
	}
	c.Invalidate()
	waited := make(chan struct{})
	go func() { defer close(waited); _, _ = c.Get(context.Background()) }()
	select {
	case <-waited:
		t.Error("after Invalidate a Get was answered while the re-read was still running")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-done
	<-waited
}
