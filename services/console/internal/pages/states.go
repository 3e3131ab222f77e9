package pages

import (
	"context"
	"sync"

	"github.com/doclib/services/console/internal/boclient"
)

// The documents list shows each document's states as badges. The API's
// listing says whether a document is published, a draft or deleted, but
// not whether it has pending changes or a schedule: those are in its
// detail. The console reads the detail of each live document once per
// change (a write, a publication at its time, any change moves the
// listing's updatedAt) and keeps what it says; a listing that carries
// pendingChanges (and publishAt when set) is taken as it is, with no
// detail read.

// detailState is what a document's detail says beyond the listing.
type detailState struct {
	updatedAt string // the listing's updatedAt it was read at
	pending   bool
	publishAt string
}

// stateCache keeps the detail states by document id.
type stateCache struct {
	mu    sync.Mutex
	byID  map[string]detailState
	learn uint64 // counts the states learnt: the kept rows are rendered again when it moves
}

// stateReads is how many details the page reads at once.
const stateReads = 8

// missing are the live documents of docs whose state is not known at
// their current updatedAt, and the generation of the cache.
func (sc *stateCache) missing(docs []boclient.DocumentShort) ([]string, uint64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var out []string
	for _, d := range docs {
		if d.IsDeleted || d.PendingChanges != nil {
			continue
		}
		if s, ok := sc.byID[d.ID]; !ok || s.updatedAt != d.UpdatedAt {
			out = append(out, d.ID)
		}
	}
	return out, sc.learn
}

// put keeps what doc's detail said.
func (sc *stateCache) put(doc boclient.Document) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.byID == nil {
		sc.byID = map[string]detailState{}
	}
	sc.byID[doc.ID] = detailState{updatedAt: doc.UpdatedAt, pending: doc.Draft != nil, publishAt: doc.PublishAt}
	sc.learn++
}

// generation counts the states learnt so far.
func (sc *stateCache) generation() uint64 {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.learn
}

// of is d's pending changes and scheduled publication: the listing's when
// it carries them, else the kept detail's when it is of d's current
// version (nothing known otherwise).
func (sc *stateCache) of(d boclient.DocumentShort) (pending bool, publishAt string) {
	if d.PendingChanges != nil { // the listing says it (publishAt only when set)
		if d.PublishAt != nil {
			publishAt = *d.PublishAt
		}
		return *d.PendingChanges, publishAt
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if s, ok := sc.byID[d.ID]; ok && s.updatedAt == d.UpdatedAt {
		return s.pending, s.publishAt
	}
	return false, ""
}

// learnStates reads the details of the live documents of docs whose
// states are not known, stateReads at a time, until ctx ends; a detail
// that cannot be read is left unknown (its badges are those of the
// listing) and tried again by the next page.
func (p *Pages) learnStates(ctx context.Context, token string, docs []boclient.DocumentShort) {
	ids, _ := p.states.missing(docs)
	if len(ids) == 0 {
		return
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(stateReads, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				if doc, _, err := p.cfg.API.Document(ctx, token, id); err == nil {
					p.states.put(doc)
				}
			}
		}()
	}
	for _, id := range ids {
		select {
		case work <- id:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
}
