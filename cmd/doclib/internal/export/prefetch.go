package export

import (
	"context"
	"encoding/json"

	"github.com/doclib/cmd/doclib/internal/library"
)

// fetched is one document read ahead: its detail and the revisions up to
// its version, or the error reading them.
type fetched struct {
	detail  json.RawMessage
	version int64
	refs    library.Refs
	revs    []json.RawMessage
	err     error
}

// prefetcher reads documents ahead of the single goroutine writing the
// archive, at most workers at a time. Reading ahead changes no rule: every
// check (references present, pins first) is made when a document is
// written, in the listing's order, as without it; a document read ahead
// is only older, as if the export had reached it sooner.
type prefetcher struct {
	results []chan fetched
	slots   chan struct{} // a slot is freed when its result is taken: memory stays bounded
}

// startPrefetch starts reading ids in order; take(i) must be called for
// every i in order (it frees the slot of i).
func (e *Exporter) startPrefetch(ctx context.Context, ids []string, workers int) *prefetcher {
	p := &prefetcher{results: make([]chan fetched, len(ids)), slots: make(chan struct{}, max(workers, 1))}
	for i := range ids {
		p.results[i] = make(chan fetched, 1)
	}
	go func() {
		for i, id := range ids {
			select {
			case p.slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			go func() { p.results[i] <- e.fetch(ctx, id) }()
		}
	}()
	return p
}

func (e *Exporter) fetch(ctx context.Context, id string) fetched {
	detail, version, refs, err := e.readDocument(ctx, id)
	if err != nil {
		return fetched{err: err}
	}
	revs, err := e.revisions(ctx, id, version)
	return fetched{detail: detail, version: version, refs: refs, revs: revs, err: err}
}

// take waits for the document i read ahead and frees its slot.
func (p *prefetcher) take(ctx context.Context, i int) (fetched, error) {
	select {
	case f := <-p.results[i]:
		<-p.slots
		return f, nil
	case <-ctx.Done():
		return fetched{}, ctx.Err()
	}
}
