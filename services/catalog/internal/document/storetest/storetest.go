// Package storetest is the contract of document.Store, and of how replicas
// follow a store (Counter, Changes): one suite that every implementation
// runs, against the test database and, with TEST_MONGODB_URI set, a real
// MongoDB, so that no quirk of one server decides what the catalog relies
// on.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/doclib/services/catalog/internal/document"
)

// Store is what the suite exercises.
type Store interface {
	document.Store
	// Counter returns the change sequence's counter, its stable point:
	// every write numbered up to it is visible to reads made after.
	Counter(ctx context.Context) (int64, error)
	// Changes returns up to limit documents after (afterSeq, afterID), in
	// (seq, id) order.
	Changes(ctx context.Context, afterSeq int64, afterID string, limit int) ([]document.Document, error)
}

// Run runs the contract against the stores newStore makes (a fresh, empty
// one per call).
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, Store)
	}{
		{"CreateThenRead", createThenRead},
		{"FailedCreateLeavesNothing", failedCreateLeavesNothing},
		{"UpdateRunsTheRules", updateRunsTheRules},
		{"UpdateEach", updateEach},
		{"ConcurrentWritesLoseNothing", concurrentWritesLoseNothing},
		{"StableStaysBelowAWriteInFlight", stableStaysBelowAWriteInFlight},
		{"ChangesSkipNothing", changesSkipNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func link(title string, tags ...string) func(*document.Document) error {
	return func(d *document.Document) error {
		d.Title, d.Type, d.URL, d.TagsIDs = title, document.Link, "https://example.org/"+title, append([]string{}, tags...)
		d.CreatedAt, d.UpdatedAt = t0, t0
		return nil
	}
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func create(t *testing.T, s Store, id string, tags ...string) document.Document {
	t.Helper()
	d, err := s.Create(context.Background(), id, document.Refs{Tags: tags}, link(id, tags...))
	must(t, err, "Create "+id)
	return d
}

func createThenRead(t *testing.T, s Store) {
	ctx := context.Background()
	a := create(t, s, "a", "t1")
	md, err := s.Create(ctx, "m", document.Refs{Media: []string{"img"}}, func(d *document.Document) error {
		d.Title, d.Type, d.Content, d.Sources, d.ImagesIDs = "M", document.Markdown, "# m", []string{"s"}, []string{"img"}
		d.TagsIDs, d.TagSince = []string{}, map[string]time.Time{}
		d.CreatedAt, d.UpdatedAt = t0.Add(time.Minute), t0.Add(time.Minute)
		return nil
	})
	must(t, err, "Create m")
	if a.Seq <= 0 || md.Seq <= a.Seq {
		t.Errorf("seqs %d then %d, want positive and growing", a.Seq, md.Seq)
	}
	got, err := s.Get(ctx, "m")
	must(t, err, "Get")
	if got.Content != "# m" || strings.Join(got.ImagesIDs, ",") != "img" || got.Seq != md.Seq || !got.CreatedAt.Equal(t0.Add(time.Minute)) {
		t.Errorf("Get = %+v, want what was created", got)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("Get unknown = %v, want ErrNotFound", err)
	}
	list, err := s.Changes(ctx, 0, "", 10)
	must(t, err, "Changes")
	if len(list) != 2 || list[0].ID != "a" || list[1].Content != "# m" {
		t.Errorf("Changes = %+v, want a then m, as they are", list)
	}
	if more, _ := s.Changes(ctx, a.Seq, "", 10); len(more) != 1 || more[0].ID != "m" {
		t.Errorf("Changes after a = %+v, want m", more)
	}
}

func failedCreateLeavesNothing(t *testing.T, s Store) {
	ctx := context.Background()
	boom := errors.New("refused")
	_, err := s.Create(ctx, "x", document.Refs{Tags: []string{"t"}}, func(*document.Document) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Create = %v, want the closure's error", err)
	}
	if _, err := s.Get(ctx, "x"); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("Get after a failed create = %v, want ErrNotFound", err)
	}
	if ids, _ := s.Naming(ctx, document.Refs{Tags: []string{"t"}}); len(ids) != 0 {
		t.Errorf("Naming after a failed create = %v, want none", ids)
	}
	if ch, _ := s.Changes(ctx, 0, "", 10); len(ch) != 0 {
		t.Errorf("Changes after a failed create = %v, want none", ch)
	}
	create(t, s, "x") // the id is free again
}

func updateRunsTheRules(t *testing.T, s Store) {
	ctx := context.Background()
	a := create(t, s, "a", "t1")
	if _, err := s.Update(ctx, "nope", document.Refs{}, link("n")); !errors.Is(err, document.ErrNotFound) {
		t.Errorf("Update unknown = %v, want ErrNotFound", err)
	}
	boom := errors.New("refused")
	if _, err := s.Update(ctx, "a", document.Refs{}, func(d *document.Document) error { d.Title = "lost"; return boom }); !errors.Is(err, boom) {
		t.Errorf("Update = %v, want the closure's error", err)
	}
	got, err := s.Update(ctx, "a", document.Refs{}, func(*document.Document) error { return document.ErrUnchanged })
	if err != nil || got.Title != "a" || got.Seq != a.Seq {
		t.Errorf("unchanged Update = %+v, %v; want the stored document, same seq", got, err)
	}
	got, err = s.Update(ctx, "a", document.Refs{}, func(d *document.Document) error {
		if d.Title != "a" || strings.Join(d.TagsIDs, ",") != "t1" {
			return fmt.Errorf("closure saw %+v", d)
		}
		d.Title, d.IsDeleted, d.DeletedAt = "A", true, t0.Add(time.Hour)
		return nil
	})
	must(t, err, "Update")
	stored, _ := s.Get(ctx, "a")
	if got.Seq <= a.Seq || stored.Seq != got.Seq || stored.Title != "A" || !stored.IsDeleted || !stored.DeletedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("after Update: answered %+v, stored %+v", got, stored)
	}
	got, err = s.Update(ctx, "a", document.Refs{}, func(d *document.Document) error {
		d.IsDeleted, d.DeletedAt = false, time.Time{}
		return nil
	})
	must(t, err, "Update")
	if stored, _ := s.Get(ctx, "a"); stored.IsDeleted || !stored.DeletedAt.IsZero() {
		t.Errorf("after restore: %+v", stored)
	}
}

// block runs a write whose closure waits until release is closed, and
// returns once the closure runs.
func block(t *testing.T, write func(fn func(*document.Document) error) error, change func(*document.Document)) (release func() error) {
	t.Helper()
	entered, done := make(chan struct{}), make(chan error, 1)
	gate := make(chan struct{})
	go func() {
		done <- write(func(d *document.Document) error {
			close(entered)
			<-gate
			change(d)
			return nil
		})
	}()
	select {
	case <-entered:
	case err := <-done:
		t.Fatalf("the write ended before its closure ran: %v", err)
	}
	return func() error { close(gate); return <-done }
}

func updateEach(t *testing.T, s Store) {
	ctx := context.Background()
	for _, id := range []string{"a", "b", "c"} {
		create(t, s, id, "x", "y")
	}
	changed, err := s.UpdateEach(ctx, []string{"a", "b", "gone", "c"}, func(d *document.Document) error {
		if d.ID == "b" {
			return document.ErrUnchanged
		}
		d.TagsIDs = slices.DeleteFunc(d.TagsIDs, func(id string) bool { return id == "x" })
		return nil
	})
	must(t, err, "UpdateEach")
	var ids []string
	for _, d := range changed {
		ids = append(ids, d.ID)
		if strings.Join(d.TagsIDs, ",") != "y" {
			t.Errorf("changed %s: tags %v", d.ID, d.TagsIDs)
		}
	}
	if strings.Join(ids, ",") != "a,c" {
		t.Errorf("UpdateEach changed %v, want a and c", ids)
	}
	if b, _ := s.Get(ctx, "b"); strings.Join(b.TagsIDs, ",") != "x,y" {
		t.Errorf("b = %v, want unchanged", b.TagsIDs)
	}
}

// concurrentWritesLoseNothing: every write reads the document in its
// closure and adds one source; none may be lost, whatever the interleaving.
func concurrentWritesLoseNothing(t *testing.T, s Store) {
	ctx := context.Background()
	_, err := s.Create(ctx, "a", document.Refs{}, func(d *document.Document) error {
		d.Title, d.Type, d.Content, d.Sources, d.ImagesIDs, d.TagsIDs = "A", document.Markdown, "x", []string{}, []string{}, []string{}
		return nil
	})
	must(t, err, "Create")
	const writers, each = 4, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				_, err := s.Update(ctx, "a", document.Refs{}, func(d *document.Document) error {
					d.Sources = append(d.Sources, fmt.Sprintf("%d-%d", w, i))
					return nil
				})
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err, "concurrent Update")
	}
	d, _ := s.Get(ctx, "a")
	if len(d.Sources) != writers*each {
		t.Errorf("%d sources after %d writes: updates were lost", len(d.Sources), writers*each)
	}
}

func stableStaysBelowAWriteInFlight(t *testing.T, s Store) {
	ctx := context.Background()
	create(t, s, "a")
	release := block(t, func(fn func(*document.Document) error) error {
		_, err := s.Update(ctx, "a", document.Refs{}, fn)
		return err
	}, func(d *document.Document) { d.Title = "in flight" })
	create(t, s, "b") // committed while a is in flight
	during, err := s.Counter(ctx)
	must(t, err, "Counter")
	must(t, release(), "Update")
	a, _ := s.Get(ctx, "a")
	if during >= a.Seq {
		t.Errorf("stable point %d while a was in flight, a then got seq %d: a reader could skip it", during, a.Seq)
	}
	after, _ := s.Counter(ctx)
	if b, _ := s.Get(ctx, "b"); after < a.Seq || after < b.Seq {
		t.Errorf("stable point %d once idle, want at least %d and %d", after, a.Seq, b.Seq)
	}
}

// changesSkipNothing: a reader follows the store as replicas do (stable
// point, then the changes after its last one) while writers create and
// change documents; once they stop, one more read must leave the reader
// with exactly what the store holds.
func changesSkipNothing(t *testing.T, s Store) {
	ctx := context.Background()
	const writers, each = 3, 15
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				_, err := s.Create(ctx, id, document.Refs{}, link(id))
				errs <- err
				prev := fmt.Sprintf("w%d-%d", w, i/2)
				_, err = s.Update(ctx, prev, document.Refs{}, func(d *document.Document) error {
					d.Title += "+"
					return nil
				})
				errs <- err
			}
		}()
	}
	seen := map[string]document.Document{}
	var stable int64
	follow := func() {
		st, err := s.Counter(ctx)
		must(t, err, "Counter")
		var seq int64
		var id string
		seq = stable
		for {
			page, err := s.Changes(ctx, seq, id, 7)
			must(t, err, "Changes")
			for _, d := range page {
				if old, ok := seen[d.ID]; !ok || old.Seq < d.Seq {
					seen[d.ID] = d
				}
				seq, id = d.Seq, d.ID
			}
			if len(page) < 7 {
				break
			}
		}
		stable = max(stable, st)
	}
	go func() { wg.Wait(); close(stop) }()
	for running := true; running; {
		select {
		case <-stop:
			running = false
		default:
			follow()
		}
	}
	close(errs)
	for err := range errs {
		must(t, err, "write")
	}
	follow()
	all, err := s.Changes(ctx, 0, "", 1000)
	must(t, err, "Changes")
	if len(all) != len(seen) {
		t.Errorf("the reader holds %d documents, the store %d", len(seen), len(all))
	}
	for _, d := range all {
		if got := seen[d.ID]; got.Title != d.Title || got.Seq != d.Seq {
			t.Errorf("document %s: the reader holds %q (seq %d), the store %q (seq %d): a change was skipped",
				d.ID, got.Title, got.Seq, d.Title, d.Seq)
		}
	}
}
