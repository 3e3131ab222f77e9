package restore

import (
	"context"
	"sync"
)

// pool runs jobs, at most n at a time; the first error cancels the others
// and is the one wait returns. Every import route is idempotent, so a job
// cut short is finished by the next run.
type pool struct {
	ctx    context.Context
	cancel context.CancelFunc
	slots  chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

func newPool(ctx context.Context, n int) *pool {
	ctx, cancel := context.WithCancel(ctx)
	return &pool{ctx: ctx, cancel: cancel, slots: make(chan struct{}, max(n, 1))}
}

// goRun starts job once a slot is free; false when the pool has failed
// (or its context is done): start nothing more.
func (p *pool) goRun(job func(ctx context.Context) error) bool {
	select {
	case p.slots <- struct{}{}:
	case <-p.ctx.Done():
		return false
	}
	p.wg.Add(1)
	go func() {
		defer func() { <-p.slots; p.wg.Done() }()
		if err := job(p.ctx); err != nil {
			p.fail(err)
		}
	}()
	return true
}

func (p *pool) fail(err error) {
	p.once.Do(func() { p.err = err; p.cancel() })
}

// wait waits for every job started and returns the first error.
func (p *pool) wait() error {
	p.wg.Wait()
	p.cancel()
	return p.err
}
