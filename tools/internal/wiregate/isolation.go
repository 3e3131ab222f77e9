package wiregate

import (
	"errors"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/bson"
)

// Read isolation. A transaction's writes go to FerretDB as it makes them,
// so a read by anyone else of what it wrote would see them before the
// commit (a dirty read). MongoDB answers such a read at once from the last
// committed state; the gate does the same with the images the transaction
// keeps for its abort:
//
//   - A read outside the transaction (find, aggregate, count, distinct) of
//     a collection it wrote first sets its writes aside: the gate reads
//     the current state of every document the transaction changed (its
//     post-image) and writes the pre-image back. The stored state is then
//     the committed one, and the read runs on it.
//   - A command of the transaction first puts its writes back (the
//     post-images), then runs on its own state.
//   - The two take turns: reads outside run together; a command of the
//     transaction waits for the reads under way to be answered by FerretDB,
//     and new reads wait for it, a command's length at most.
//
// Nobody ever waits for the end of a transaction to read, only for one of
// its commands (or a read) under way in FerretDB, which waits for nothing
// of the gate's. So the transaction's next command can never queue behind
// readers: readers hold their turn only until FerretDB has answered them
// (not while their answer is written to a client that may not read it),
// and a driver's connection pool full of them empties on its own.
//
// A cursor opened outside the transaction reads on from the state it was
// opened on: FerretDB runs its query as one SQL statement, whose snapshot
// a getMore continues; getMore never waits.
//
// Reads of a collection the transaction has not written, and reads when no
// transaction is under way, take a turn too (no waiting but for a
// transaction's command under way): the check "not written" and the
// read's start in FerretDB must not be separated by a write of the
// transaction.
type turns struct {
	mu      sync.Mutex
	changed *sync.Cond
	readers int  // reads outside a transaction under way in FerretDB
	busy    bool // a transaction's command (or its end) under way
	waiting int  // transaction commands waiting for the readers to finish
	aside   *txn // the transaction whose writes are set aside
}

func (v *turns) wait() {
	if v.changed == nil {
		v.changed = sync.NewCond(&v.mu)
	}
	v.changed.Wait()
}

func (v *turns) wake() {
	if v.changed != nil {
		v.changed.Broadcast()
	}
}

// errTxnBroken is a transaction whose writes could not be set aside or put
// back: its state in FerretDB is a mix, and only its abort (which writes
// every pre-image back) makes it whole again.
var errTxnBroken = errors.New("the transaction's writes could not be set aside or put back")

// readTurn waits for read c's turn and returns its release; when c reads
// a collection the transaction under way wrote, that transaction's writes
// are set aside first, on u.
func (g *Gate) readTurn(c command, u upstream) (release func(), err error) {
	nss := readNamespaces(c)
	if len(nss) == 0 {
		return func() {}, nil
	}
	v := &g.turns
	v.mu.Lock()
	defer v.mu.Unlock()
	for {
		if v.busy || v.waiting > 0 {
			v.wait()
			continue
		}
		t := g.activeTxn()
		if t == nil || v.aside == t || !t.wrote(g, nss) {
			break
		}
		if t.broken {
			// Its abort is under way and makes the state whole again.
			v.wait()
			continue
		}
		if err := g.setAside(t, u); err != nil {
			t.broken = true
			go g.expire(t)
			return nil, err
		}
		v.aside = t
		break
	}
	v.readers++
	return func() {
		v.mu.Lock()
		v.readers--
		v.wake()
		v.mu.Unlock()
	}, nil
}

// txnTurn waits for the turn of a command of t (its end included) and
// returns its release. Unless ending is set (an abort, which writes the
// pre-images back itself), t's writes set aside are put back first, on u.
func (g *Gate) txnTurn(t *txn, u upstream, ending bool) (release func(), err error) {
	v := &g.turns
	v.mu.Lock()
	defer v.mu.Unlock()
	v.waiting++
	for v.readers > 0 || v.busy {
		v.wait()
	}
	v.waiting--
	defer v.wake() // readers wait while v.waiting > 0
	if v.aside == t {
		if ending {
			v.aside = nil
		} else if err := g.putBack(t, u); err != nil {
			t.broken = true
			return nil, err
		} else {
			v.aside = nil
		}
	}
	if t.broken && !ending {
		return nil, errTxnBroken
	}
	v.busy = true
	return func() {
		v.mu.Lock()
		v.busy = false
		v.wake()
		v.mu.Unlock()
	}, nil
}

func (g *Gate) activeTxn() *txn {
	g.txMu.Lock()
	defer g.txMu.Unlock()
	return g.active
}

// wrote reports whether t wrote one of nss.
func (t *txn) wrote(g *Gate, nss []string) bool {
	g.txMu.Lock()
	defer g.txMu.Unlock()
	for _, ns := range nss {
		if t.written[ns] {
			return true
		}
	}
	return false
}

// setAside reads the current state of each document t changed since it
// was last set aside into t.post, then writes every pre-image back, last
// change first (as an abort does, so a unique key moved between documents
// goes back in order).
func (g *Gate) setAside(t *txn, u upstream) error {
	for _, k := range t.order {
		if !t.touched[k] {
			continue
		}
		img := t.images[k]
		docs, err := u.findAll(img.db, img.coll, idFilter(img.id))
		if err != nil {
			return err
		}
		now := image{db: img.db, coll: img.coll, id: img.id}
		if len(docs) > 0 {
			now.doc = docs[0]
		}
		t.post[k] = now
	}
	clear(t.touched)
	return putAll(u, t.images, reversed(t.order))
}

// putBack writes t's post-images back, first change first.
func (g *Gate) putBack(t *txn, u upstream) error {
	return putAll(u, t.post, t.order)
}

// putAll makes the documents of imgs (in the order of keys) as they were
// imaged; what fails is tried once more at the end.
func putAll(u upstream, imgs map[string]image, keys []string) error {
	var failed []string
	for _, k := range keys {
		if err := u.put(imgs[k]); err != nil {
			failed = append(failed, k)
		}
	}
	var errs []error
	for _, k := range failed {
		errs = append(errs, u.put(imgs[k]))
	}
	return errors.Join(errs...)
}

func reversed(keys []string) []string {
	out := slices.Clone(keys)
	slices.Reverse(out)
	return out
}

func idFilter(id bson.RawValue) bson.RawValue {
	b, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}})
	return bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: b}
}
