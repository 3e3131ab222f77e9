package mongox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"
)

// txOptions: a transaction reads one snapshot and commits once a majority
// of the replica set has its writes, so a commit that was acknowledged
// survives a change of primary.
func txOptions() *options.TransactionOptionsBuilder {
	return options.Transaction().
		SetReadConcern(readconcern.Snapshot()).
		SetWriteConcern(writeconcern.Majority())
}

// InTx runs fn in one transaction: every write fn makes through the ctx it
// receives commits together, or none does. fn may run more than once (the
// driver retries a transient error, such as a write conflict with another
// transaction) so it must only write to the database, through its ctx, and
// return every error it meets.
//
// When ctx belongs to a request whose transaction is held open (Hold), fn
// joins it instead: its writes commit with the request's outcome. Inside
// another InTx's fn, fn joins that transaction too (a second transaction
// would wait for the first, which waits for it, on a database that runs
// one transaction at a time).
//
// Work registered with OnCommit during fn runs once the commit succeeded.
func InTx(ctx context.Context, client *mongo.Client, fn func(ctx context.Context) error) error {
	if _, inside := ctx.Value(hooksKey{}).(*commitHooks); inside {
		return fn(ctx)
	}
	if h, ok := ctx.Value(heldKey{}).(*Held); ok {
		return h.join(ctx, fn)
	}
	sess, err := client.StartSession()
	if err != nil {
		return fmt.Errorf("mongodb session: %w", err)
	}
	defer sess.EndSession(context.WithoutCancel(ctx))
	var hooks *commitHooks
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		hooks = &commitHooks{}
		err := fn(context.WithValue(ctx, hooksKey{}, hooks))
		if unreachable(err) {
			// WithTransaction would run fn again until ctx ends; the
			// caller's own retry (a 503, an event redelivered) waits instead.
			return nil, unretried{err}
		}
		return nil, err
	}, txOptions())
	if u, ok := err.(unretried); ok {
		return u.err
	}
	if err != nil {
		return err
	}
	hooks.run()
	return nil
}

// unreachable reports an error of a database that cannot be reached (no
// server selected, the connection failed), as opposed to a conflict
// between transactions, which is worth running again at once.
func unreachable(err error) bool {
	var sel topology.ServerSelectionError
	return err != nil && (errors.As(err, &sel) || mongo.IsNetworkError(err))
}

// unretried hides an error's labels from WithTransaction (no Unwrap), so
// that it does not run the transaction again.
type unretried struct{ err error }

func (u unretried) Error() string { return u.err.Error() }

// OnCommit runs f once the transaction ctx belongs to has committed; at
// once when ctx belongs to none. An outbox wakes its relay this way.
//
// A request whose transaction is held (Hold) runs f once that transaction
// commits, before its answer leaves: what f publishes in memory is then
// never a write the request's failure undid.
func OnCommit(ctx context.Context, f func()) {
	if h, ok := ctx.Value(hooksKey{}).(*commitHooks); ok {
		h.add(f)
		return
	}
	if h, ok := ctx.Value(heldKey{}).(*Held); ok {
		h.mu.Lock()
		h.hooks.add(f)
		h.mu.Unlock()
		return
	}
	f()
}

type hooksKey struct{}

type commitHooks struct {
	mu sync.Mutex
	fs []func()
}

func (h *commitHooks) add(f func()) {
	h.mu.Lock()
	h.fs = append(h.fs, f)
	h.mu.Unlock()
}

func (h *commitHooks) run() {
	h.mu.Lock()
	fs := h.fs
	h.fs = nil
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Held is a request's transaction kept open until its answer is known, so
// that what the request wrote and what it answered (an Idempotency-Key's
// outcome) commit together. The request's InTx calls join it; Commit or
// Abort ends it.
type Held struct {
	client *mongo.Client
	mu     sync.Mutex
	sess   *mongo.Session
	hooks  commitHooks
}

type heldKey struct{}

// Hold returns ctx carrying a transaction that the InTx calls made with it
// join, and that nothing commits until Commit.
func Hold(ctx context.Context, client *mongo.Client) (context.Context, *Held) {
	h := &Held{client: client}
	return context.WithValue(ctx, heldKey{}, h), h
}

// join runs fn in the held transaction, starting it if need be. A failing
// fn aborts the transaction, undoing every write joined so far (the
// request then answers its failure, which commits nothing of it). When fn
// is the transaction's first and fails with a transient transaction error
// (a write conflict with another transaction), it runs again in a new
// one, as WithTransaction does, while ctx lasts.
func (h *Held) join(ctx context.Context, fn func(ctx context.Context) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	first := h.sess == nil
	for {
		if err := h.start(); err != nil {
			return err
		}
		err := fn(context.WithValue(mongo.NewSessionContext(ctx, h.sess), hooksKey{}, &h.hooks))
		if err == nil {
			return nil
		}
		h.abort(ctx)
		if !first || !transient(err) || unreachable(err) || ctx.Err() != nil {
			return err
		}
	}
}

// transient reports an error the server labels TransientTransactionError:
// the whole transaction may run again.
func transient(err error) bool {
	var le mongo.LabeledError
	return errors.As(err, &le) && le.HasErrorLabel("TransientTransactionError")
}

func (h *Held) start() error {
	if h.sess != nil {
		return nil
	}
	sess, err := h.client.StartSession()
	if err != nil {
		return fmt.Errorf("mongodb session: %w", err)
	}
	if err := sess.StartTransaction(txOptions()); err != nil {
		sess.EndSession(context.Background())
		return fmt.Errorf("mongodb transaction: %w", err)
	}
	h.sess = sess
	return nil
}

func (h *Held) abort(ctx context.Context) {
	if h.sess == nil {
		return
	}
	_ = h.sess.AbortTransaction(context.WithoutCancel(ctx))
	h.sess.EndSession(context.WithoutCancel(ctx))
	h.sess = nil
	h.hooks = commitHooks{}
}

// Abort undoes what the request wrote.
func (h *Held) Abort(ctx context.Context) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.abort(ctx)
}

// Commit runs last in the held transaction (starting one if the request
// wrote nothing), then commits it, retrying a commit whose result is
// unknown as the driver's WithTransaction does. On an error the
// transaction is aborted, unless its result is unknown (ErrCommitUnknown).
func (h *Held) Commit(ctx context.Context, last func(ctx context.Context) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.start(); err != nil {
		return err
	}
	if err := last(mongo.NewSessionContext(ctx, h.sess)); err != nil {
		h.abort(ctx)
		return err
	}
	for {
		err := h.sess.CommitTransaction(ctx)
		if err == nil {
			break
		}
		var ce mongo.CommandError
		unknown := IsUnavailable(err) || errors.As(err, &ce) && ce.HasErrorLabel(driver.UnknownTransactionCommitResult)
		if !unknown {
			h.abort(ctx)
			return err
		}
		if ctx.Err() != nil {
			h.sess.EndSession(context.WithoutCancel(ctx))
			h.sess = nil
			return fmt.Errorf("%w: %w", ErrCommitUnknown, err)
		}
		time.Sleep(commitRetryWait)
	}
	h.sess.EndSession(ctx)
	h.sess = nil
	h.hooks.run()
	return nil
}

// commitRetryWait is the pause between two tries of a commit whose result
// is unknown; the caller's ctx bounds them.
const commitRetryWait = 50 * time.Millisecond

// ErrCommitUnknown is a commit whose outcome the database never told: it
// may have been applied.
var ErrCommitUnknown = errors.New("the transaction's commit outcome is unknown")
