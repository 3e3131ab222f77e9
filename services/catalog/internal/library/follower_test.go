package library

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
)

// gate holds the reads that pass it: open, closed until opened again, or
// letting one through per step.
type gate struct {
	mu     sync.Mutex
	shut   chan struct{} // nil: open
	steps  chan struct{} // nil: not stepping
	passed atomic.Int32  // reads that reached it
}

// close holds every read until the returned func opens the gate.
func (g *gate) close() (open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	shut := make(chan struct{})
	g.shut = shut
	return sync.OnceFunc(func() {
		g.mu.Lock()
		g.shut = nil
		g.mu.Unlock()
		close(shut)
	})
}

// step makes every read wait for a send on the channel returned.
func (g *gate) step() chan<- struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.steps = make(chan struct{})
	return g.steps
}

func (g *gate) pass(ctx context.Context) error {
	g.passed.Add(1)
	g.mu.Lock()
	shut, steps := g.shut, g.steps
	g.mu.Unlock()
	if shut == nil && steps == nil {
		return nil // opened meanwhile
	}
	select {
	case <-shut: // nil: blocks; see steps
	case <-steps:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

func (g *gate) isOpen() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shut == nil && g.steps == nil
}

// gated is the store whose counter and changes are read through gates.
type gated struct {
	*mongostore.Store
	counter, changes gate
}

func (s *gated) Counter(ctx context.Context) (int64, error) {
	if !s.counter.isOpen() {
		if err := s.counter.pass(ctx); err != nil {
			return 0, err
		}
	}
	return s.Store.Counter(ctx)
}

func (s *gated) Changes(ctx context.Context, afterSeq int64, afterID string, limit int) ([]document.Document, error) {
	if s.changes.isOpen() {
		s.changes.passed.Add(1)
	} else if err := s.changes.pass(ctx); err != nil {
		return nil, err
	}
	return s.Store.Changes(ctx, afterSeq, afterID, limit)
}

// waitFor fails the test unless ok becomes true within 10 s.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting: %s", what)
		}
	}
}

// A replica whose store stalls (the follower's look waits on it) serves
// the last snapshot to public reads as fast as before, however stale; a
// read that must be fresh waits, within its own budget.
func TestAStalledStoreKeepsPublicReadsFast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, _, d := oneDocument(t)
	src := &gated{Store: store}
	l := replica(t, src, w)
	_, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	usual := timeReads(t, l, d.ID)

	open := src.counter.close()
	defer open()
	stuck := make(chan error, 1)
	go func() { _, err := l.Get(ctx, 0); stuck <- err }()
	waitFor(t, "the follower's look waiting on the stalled store", func() bool { return src.counter.passed.Load() > 0 })
	time.Sleep(150 * time.Millisecond) // the snapshot older than a public read allows
	stalled := timeReads(t, l, d.ID)
	if stalled > 10*usual+2*time.Millisecond {
		t.Errorf("public reads took %v each with the store stalled, %v before", stalled, usual)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := l.Get(short, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a fresh read with the store stalled: %v, want its budget's end", err)
	}
	select {
	case err := <-stuck:
		t.Fatalf("a fresh read returned (%v) while the store stalled", err)
	default:
	}
	open()
	testkit.Must(t, <-stuck, "Get once the store answers")
}

// timeReads returns the mean time of a public read of the document id.
func timeReads(t *testing.T, l *Library, id string) time.Duration {
	t.Helper()
	const n = 200
	begun := time.Now()
	for range n {
		s, err := l.Get(context.Background(), 100*time.Millisecond)
		testkit.Must(t, err, "a public Get")
		if _, ok := s.Public(id); !ok {
			t.Fatalf("a public read does not find %s", id)
		}
	}
	return time.Since(begun) / n
}

// A fresh read waits for the snapshot of a look begun after it arrived,
// not the one under way when it arrived, and not any later one.
func TestAFreshReadWaitsForTheNextLookOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc, _ := oneDocument(t)
	src := &gated{Store: store}
	l := replica(t, src, w)
	_, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")

	step := src.counter.step()
	l.wake()
	waitFor(t, "a look under way", func() bool { return src.counter.passed.Load() == 1 })
	before := l.Current().look // the look under way is the next one
	d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "T", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	fresh := make(chan *Snapshot, 1)
	go func() { s, _ := l.Get(ctx, 0); fresh <- s }()
	time.Sleep(50 * time.Millisecond) // the fresh read has arrived

	step <- struct{}{} // the look under way ends
	waitFor(t, "the look under way published", func() bool { return l.Current().look > before })
	first := l.Current()
	select {
	case s := <-fresh:
		t.Fatalf("a fresh read got the snapshot of look %d, begun before it arrived (%d)", s.look, first.look)
	case <-time.After(100 * time.Millisecond):
	}
	waitFor(t, "the next look", func() bool { return src.counter.passed.Load() == 2 })
	step <- struct{}{} // the next one ends; any later one waits for a step never given
	select {
	case s := <-fresh:
		if s.look != first.look+1 {
			t.Errorf("the fresh read got look %d, want %d", s.look, first.look+1)
		}
		if _, ok := s.Doc(d.ID); !ok {
			t.Error("the fresh read's snapshot lacks a document written before it arrived")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the fresh read waited past the first look begun after it")
	}
}

// The follower's look outlives the read that woke it: a refresh longer
// than a request's budget (a replica starting cold, or far behind, on a
// slow database) goes on, so the replica catches up instead of beginning
// again with every request.
func TestALookOutlivesItsCaller(t *testing.T) {
	t.Parallel()
	store, w, _, d := oneDocument(t)
	src := &gated{Store: store}
	open := src.changes.close()
	l := replica(t, src, w)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := l.Get(ctx, 0); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get past its deadline: %v, want context.DeadlineExceeded", err)
	}
	open()
	waitFor(t, "the look woken by a read that gave up", func() bool { return l.Current().loaded() })
	if _, ok := l.Current().Doc(d.ID); !ok {
		t.Error("the snapshot the look read lacks the document")
	}
	if n := src.changes.passed.Load(); n != 1 {
		t.Errorf("the changes were read %d times, want once: a later read began again", n)
	}
}

// A Put never waits for the follower's read of the store (a write's
// answer, an event's acknowledgement would wait behind a replica reading
// much on a slow database), and what was put while the look read is in
// the snapshot the look publishes.
func TestPutDuringALook(t *testing.T) {
	t.Parallel()
	store, w, svc, _ := oneDocument(t)
	src := &gated{Store: store}
	l := replica(t, src, w)
	ctx := context.Background()
	_, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	open := src.changes.close()
	first, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "T1", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	looked := make(chan *Snapshot)
	go func() {
		s, err := l.Get(ctx, 0) // the look sees the counter move and waits in its read of the changes
		if err != nil {
			t.Errorf("Get: %v", err)
		}
		looked <- s
	}()
	waitFor(t, "the look reading the changes", func() bool { return src.changes.passed.Load() >= 2 })
	second, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "T2", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	put := make(chan struct{})
	go func() { l.Put(second); close(put) }()
	select {
	case <-put:
	case <-time.After(5 * time.Second):
		t.Fatal("Put waited for the look's read of the store")
	}
	open()
	s := <-looked
	for _, d := range []document.Document{first, second} {
		if _, ok := s.Doc(d.ID); !ok {
			t.Errorf("the look's snapshot lacks %s (%s)", d.ID, d.Title)
		}
	}
}

// A document put into memory while a look reads the store, then deleted,
// purged and swept before the look ends, stays gone: the look's read
// covers it, and putting it back made it live again on this replica for
// good (found by review of bb9a66d).
func TestAPutDuringALookDoesNotBringBackAPurgedDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc, d := oneDocument(t)
	src := &gated{Store: store}
	l := replica(t, src, w)
	_, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	_, err = svc.Create(ctx, document.Input{Type: "LINK", Title: "U", URL: "https://y.org"}) // the counter moves
	testkit.Must(t, err, "Create")

	open := src.changes.close()
	got := make(chan error, 1)
	go func() { _, err := l.Get(ctx, 0); got <- err }()
	waitFor(t, "the look reading the changes", func() bool { return src.changes.passed.Load() >= 2 })
	l.Put(d) // as this replica's write of it
	purgeForGood(t, store, svc, d.ID)
	open()
	testkit.Must(t, <-got, "Get")
	s, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	if held, ok := s.Doc(d.ID); ok {
		t.Errorf("a document purged for good during the look is held (deleted: %v)", held.IsDeleted)
	}
}

// A replica whose wall clock is stepped back (NTP, a resumed VM) still
// looks at the store for a read that allows no lag: a write through
// another replica is read at once, as before the step.
func TestAClockSteppedBackFreezesNoReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc := newCatalog(t, 2)
	l := replica(t, store, w)
	var back atomic.Int64
	// The wall clock stepped back: a reading without the monotonic one,
	// as time.Now gives after a step.
	l.now = func() time.Time { return time.Now().Round(0).Add(-time.Duration(back.Load())) }
	_, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	back.Store(int64(time.Hour))
	d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "T", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	s, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	if _, ok := s.Doc(d.ID); !ok {
		t.Error("after the clock stepped back, a read allowing no lag did not see a write through another replica")
	}
}

// A public read of a snapshot older than it allows wakes the follower at
// once (not at its idle rhythm) without waiting itself, and a later public
// read sees a write through another replica.
func TestAPublicReadWakesTheFollower(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, w, svc := newCatalog(t, 2)
	l := replica(t, store, w)
	_, err := l.Get(ctx, 0)
	testkit.Must(t, err, "Get")
	d, err := svc.Create(ctx, document.Input{Type: "LINK", Title: "T", URL: "https://x.org"})
	testkit.Must(t, err, "Create")
	time.Sleep(20 * time.Millisecond)
	begun := func() uint64 {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.begun
	}
	before := begun()
	_, err = l.Get(ctx, 10*time.Millisecond)
	testkit.Must(t, err, "a public Get")
	for deadline := time.Now().Add(idleEvery / 2); begun() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no look began within %v of a public read of a stale snapshot", idleEvery/2)
		}
	}
	waitFor(t, "a public read seeing a write through another replica", func() bool {
		s, err := l.Get(ctx, 10*time.Millisecond)
		return err == nil && slices.ContainsFunc(s.Listing(false), func(x *document.Document) bool { return x.ID == d.ID })
	})
}
