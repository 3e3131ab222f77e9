package wiregate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.mongodb.org/mongo-driver/bson"
)

// Transactions. FerretDB v1 has none, so the gate makes them:
//
//   - Isolation: a transaction holds the gate's write side (locks.all,
//     exclusively) from its first command to its end, so no other write
//     runs meanwhile, and a read by another session of a collection the
//     transaction wrote is answered from the committed state, its writes
//     set aside for the read (isolation.go). Nobody sees its writes before
//     the commit, and nobody changes what it read. Transactions therefore
//     run one at a time, and never conflict.
//   - Atomicity: before each of its writes the gate reads, by the write's
//     own filter, the documents it may change, and keeps the first image
//     of each (or its absence, for an insert or an upsert). Aborting puts
//     them back: on abortTransaction, on an error inside the transaction
//     (as MongoDB, which aborts then), when a connection that carried one
//     of its commands closes (a killed client), and after Lifetime.
//   - Commit puts back its writes if a read had set them aside, forgets
//     the images and releases the write side; a repeated
//     commitTransaction is answered as committed.
//
// The hazards of the package comment stay solved: getMore, killCursors
// and handshakes never wait, and DDL is refused inside a transaction
// (OperationNotSupportedInTransaction), so no DROP INDEX can wait inside
// FerretDB for a cursor while the transaction holds the gate.

// DefaultLifetime is MongoDB's transactionLifetimeLimitSeconds.
const DefaultLifetime = 60 * time.Second

// txnCommands are what a transaction may run. Like MongoDB, count,
// listCollections and listIndexes are refused; unlike MongoDB (4.4+), so
// are create and createIndexes: a transaction that needs a collection
// finds it made at start-up.
var txnCommands = map[string]bool{
	"find": true, "getMore": true, "aggregate": true, "distinct": true, "killCursors": true,
	"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
}

// txn is a transaction under way.
type txn struct {
	s       *session
	number  int64
	images  map[string]image // by namespace and _id
	order   []string         // keys of images, first change first
	timer   *time.Timer
	locked  bool            // it holds locks.all
	conns   map[int64]bool  // connections that carried its commands; under Gate.txMu
	written map[string]bool // namespaces it wrote; under Gate.txMu

	// Under Gate.turns.mu (isolation.go):
	post    map[string]image // its writes as last set aside, by the keys of images
	touched map[string]bool  // keys of images changed since last set aside
	broken  bool             // setting aside or putting back failed: only an abort is left
}

// image is a document as it was before the transaction changed it; doc is
// nil when it did not exist.
type image struct {
	db, coll string
	id       bson.RawValue
	doc      bson.Raw
}

func (g *Gate) lifetime() time.Duration {
	if g.Lifetime > 0 {
		return g.Lifetime
	}
	return DefaultLifetime
}

// inTransaction runs a command of a transaction (autocommit: false).
func (g *Gate) inTransaction(cc *clientConn, c command, req []byte, u upstream) error {
	if c.lsid == "" || !c.hasTxn {
		return cc.reply(errorReply(c.requestID, codeInvalidOptions, "a transaction's command needs lsid and txnNumber"))
	}
	s := g.sessions.get(c.lsid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.start {
		if resp := g.begin(s, c, &u); resp != nil {
			return cc.reply(resp)
		}
	}
	t := s.txn
	if t == nil || t.number != c.txnNumber {
		return cc.reply(noSuchTransaction(c.requestID, c.txnNumber))
	}
	g.txMu.Lock()
	t.conns[cc.id] = true
	g.txMu.Unlock()
	if !txnCommands[c.name] || writesThroughPipeline(c) {
		g.abortTxn(s, &u)
		return cc.reply(errorReply(c.requestID, codeNotSupportedInTxn, fmt.Sprintf("Cannot run '%s' in a multi-document transaction", c.name)))
	}
	release, err := g.txnTurn(t, u, false)
	if err != nil {
		g.abortTxn(s, nil)
		g.log().Error("gate: a transaction's writes could not be put back; it is aborted", "error", err)
		return cc.reply(noSuchTransaction(c.requestID, c.txnNumber))
	}
	resp, err := g.runInTxn(t, c, req, u)
	release()
	var ce captureError
	switch {
	case errors.As(err, &ce):
		g.abortTxn(s, nil) // u may be mid-answer
		return cc.reply(errorReply(c.requestID, codeInternalError, "transaction: reading what the write changes: "+ce.err.Error()))
	case err != nil:
		g.abortTxn(s, nil)
		return err
	case !answeredOK(resp):
		g.abortTxn(s, &u) // as MongoDB: an error ends the transaction
	}
	return cc.reply(resp)
}

// captureError is a write whose pre-images could not be read.
type captureError struct{ err error }

func (e captureError) Error() string { return e.err.Error() }

// runInTxn runs command c of t, in its turn, and returns FerretDB's
// answer.
func (g *Gate) runInTxn(t *txn, c command, req []byte, u upstream) ([]byte, error) {
	if c.write {
		if err := t.capture(c, u); err != nil {
			return nil, captureError{err}
		}
		g.txMu.Lock()
		t.written[c.db+"."+c.coll] = true
		g.txMu.Unlock()
	}
	var rec bytes.Buffer
	if err := g.forward(withoutFields(req, transactionFields), u.conn, u.r, &rec, false); err != nil {
		return nil, err
	}
	resp := rec.Bytes()
	if c.write {
		// Even from a failed answer: the statements before the failure
		// may have upserted, and the abort must remove what they did.
		t.noteUpserts(c, resp)
	}
	return resp, nil
}

// begin starts transaction c.txnNumber of s, waiting for the write side;
// it returns the answer to send instead when it cannot.
func (g *Gate) begin(s *session, c command, u *upstream) []byte {
	switch {
	case c.txnNumber < s.txnNumber:
		return errorReply(c.requestID, codeTransactionTooOld, fmt.Sprintf("txnNumber %d is older than the session's latest, %d", c.txnNumber, s.txnNumber))
	case c.txnNumber == s.txnNumber && (s.state != stateNone || s.written != nil):
		return errorReply(c.requestID, codeInvalidOptions, fmt.Sprintf("txnNumber %d was used already", c.txnNumber))
	}
	if s.txn != nil {
		g.abortTxn(s, u) // a newer transaction ends the older, as on MongoDB
	}
	t := &txn{s: s, number: c.txnNumber, images: map[string]image{},
		conns: map[int64]bool{}, written: map[string]bool{},
		post: map[string]image{}, touched: map[string]bool{}}
	if !g.Off {
		g.locks.all.Lock()
		t.locked = true
	}
	s.txn, s.txnNumber, s.state, s.written = t, c.txnNumber, stateActive, nil
	g.txMu.Lock()
	g.active = t
	g.txMu.Unlock()
	t.timer = time.AfterFunc(g.lifetime(), func() { g.expire(t) })
	return nil
}

func noSuchTransaction(requestID int32, n int64) []byte {
	return errorReply(requestID, codeNoSuchTransaction,
		fmt.Sprintf("Transaction with { txnNumber: %d } has been aborted or is not in progress", n), labelTransientTransactionEr)
}

// endTransaction answers commitTransaction and abortTransaction.
func (g *Gate) endTransaction(cc *clientConn, c command, u upstream) error {
	if c.lsid == "" || !c.hasTxn {
		return cc.reply(errorReply(c.requestID, codeInvalidOptions, c.name+" needs lsid and txnNumber"))
	}
	s := g.sessions.get(c.lsid)
	s.mu.Lock()
	defer s.mu.Unlock()
	commit := c.name == "commitTransaction"
	switch {
	case s.txn != nil && s.txn.number == c.txnNumber:
		if commit {
			release, err := g.txnTurn(s.txn, u, false)
			if err != nil {
				g.abortTxn(s, nil)
				g.log().Error("gate: a transaction's writes could not be put back; it is aborted", "error", err)
				return cc.reply(noSuchTransaction(c.requestID, c.txnNumber))
			}
			g.finish(s, stateCommitted)
			release()
		} else {
			g.abortTxn(s, &u)
		}
		return cc.reply(okReply(c.requestID))
	case c.txnNumber == s.txnNumber && s.state == stateCommitted:
		if commit {
			return cc.reply(okReply(c.requestID)) // a retried commit
		}
		return cc.reply(errorReply(c.requestID, codeTransactionCommitted, "the transaction has been committed"))
	}
	return cc.reply(noSuchTransaction(c.requestID, c.txnNumber))
}

// expire aborts t if it is still under way: its lifetime is over, or a
// connection that carried it closed.
func (g *Gate) expire(t *txn) {
	s := t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txn == t {
		g.abortTxn(s, nil)
	}
}

// connGone aborts the transaction under way if connection id carried one
// of its commands: the client that ran it is gone.
func (g *Gate) connGone(id int64) {
	g.txMu.Lock()
	t := g.active
	used := t != nil && t.conns[id]
	g.txMu.Unlock()
	if used {
		go g.expire(t)
	}
}

// abortTxn puts back what s's transaction changed, on u or on a new
// connection when u is nil, and ends it, in its turn. Its caller holds
// s.mu.
func (g *Gate) abortTxn(s *session, u *upstream) {
	t := s.txn
	release, _ := g.txnTurn(t, upstream{}, true) // an end's turn never fails
	defer release()
	if err := g.restore(t, u); err != nil {
		g.log().Error("gate: an aborted transaction could not be undone in full", "error", err)
	}
	g.finish(s, stateAborted)
}

// finish ends s's transaction: it releases the write side and whoever
// waits for the transaction.
func (g *Gate) finish(s *session, state txnState) {
	t := s.txn
	t.timer.Stop()
	s.txn, s.state = nil, state
	g.txMu.Lock()
	if g.active == t {
		g.active = nil
	}
	g.txMu.Unlock()
	if t.locked {
		g.locks.all.Unlock()
	}
}

// restore writes t's images back, last change first (so a unique key
// moved from one document to another goes back in order); what fails is
// tried once more at the end.
func (g *Gate) restore(t *txn, u *upstream) error {
	if len(t.order) == 0 {
		return nil
	}
	if u == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := g.Dial(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		u = &upstream{conn: conn, r: bufio.NewReader(conn)}
	}
	return putAll(*u, t.images, reversed(t.order))
}

// put makes the document of img as it was.
func (u upstream) put(img image) error {
	q := bson.D{{Key: "_id", Value: img.id}}
	if img.doc == nil {
		_, err := u.run(bson.D{{Key: "delete", Value: img.coll},
			{Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "limit", Value: 1}}}}, {Key: "$db", Value: img.db}})
		return err
	}
	_, err := u.run(bson.D{{Key: "update", Value: img.coll},
		{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "u", Value: img.doc}, {Key: "upsert", Value: true}}}},
		{Key: "$db", Value: img.db}})
	return err
}

// capture keeps the images of the documents write c may change.
func (t *txn) capture(c command, u upstream) error {
	switch c.name {
	case "insert":
		for _, d := range statements(c.body, c.seqs, "documents") {
			id, err := d.LookupErr("_id")
			if err != nil {
				return errors.New("a document without _id inserted in a transaction")
			}
			if err := t.captureFilter(c, u, bson.D{{Key: "_id", Value: id}}, id); err != nil {
				return err
			}
		}
	case "update", "delete":
		for _, st := range statements(c.body, c.seqs, c.name+"s") {
			if err := t.captureFilter(c, u, st.Lookup("q"), bson.RawValue{}); err != nil {
				return err
			}
		}
	case "findAndModify", "findandmodify":
		return t.captureFilter(c, u, c.body.Lookup("query"), bson.RawValue{})
	}
	return nil
}

// captureFilter keeps the images of what filter matches; when insertID
// is set and nothing matches, the absence of that document.
func (t *txn) captureFilter(c command, u upstream, filter any, insertID bson.RawValue) error {
	var f bson.RawValue
	switch v := filter.(type) {
	case bson.RawValue:
		f = v
	default:
		b, err := bson.Marshal(v)
		if err != nil {
			return err
		}
		f = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: b}
	}
	docs, err := u.findAll(c.db, c.coll, f)
	if err != nil {
		return err
	}
	for _, d := range docs {
		t.keep(image{db: c.db, coll: c.coll, id: d.Lookup("_id"), doc: d})
	}
	if len(docs) == 0 && insertID.Type != 0 {
		t.keep(image{db: c.db, coll: c.coll, id: insertID})
	}
	return nil
}

// keep records img unless the transaction changed its document before.
func (t *txn) keep(img image) {
	k := img.db + "." + img.coll + "\x00" + string(append([]byte{byte(img.id.Type)}, img.id.Value...))
	t.touched[k] = true // what a read's setting aside must read again
	if _, ok := t.images[k]; ok {
		return
	}
	t.images[k] = image{db: img.db, coll: img.coll, id: img.id, doc: slices.Clone(img.doc)}
	t.order = append(t.order, k)
}

// noteUpserts records as absent the documents an answer says were
// upserted.
func (t *txn) noteUpserts(c command, resp []byte) {
	body, ok := msgBody(resp)
	if !ok {
		return
	}
	var ids []bson.RawValue
	if arr, ok := body.Lookup("upserted").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				ids = append(ids, d.Lookup("_id"))
			}
		}
	}
	if id, err := body.LookupErr("lastErrorObject", "upserted"); err == nil {
		ids = append(ids, id)
	}
	for _, id := range ids {
		t.keep(image{db: c.db, coll: c.coll, id: id})
	}
}

// readNamespaces are the collections a read outside a transaction reads,
// for the reads that take a turn with the transaction's commands
// (isolation.go). Not getMore: it reads on from the state its cursor was
// opened on.
func readNamespaces(c command) []string {
	switch c.name {
	case "find", "count", "distinct", "collStats":
	case "aggregate":
		return append(lookupNamespaces(c), c.db+"."+c.coll)
	default:
		return nil
	}
	if c.coll == "" {
		return nil
	}
	return []string{c.db + "." + c.coll}
}

// writesThroughPipeline reports an aggregate ending in $out or $merge,
// which MongoDB refuses in a transaction (and which the gate could not
// undo).
func writesThroughPipeline(c command) bool {
	if c.name != "aggregate" {
		return false
	}
	arr, ok := c.body.Lookup("pipeline").ArrayOK()
	if !ok {
		return false
	}
	vals, _ := arr.Values()
	for _, v := range vals {
		st, _ := v.DocumentOK()
		if _, err := st.LookupErr("$out"); err == nil {
			return true
		}
		if _, err := st.LookupErr("$merge"); err == nil {
			return true
		}
	}
	return false
}

// lookupNamespaces are the other collections a pipeline reads.
func lookupNamespaces(c command) []string {
	arr, ok := c.body.Lookup("pipeline").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	var out []string
	for _, v := range vals {
		st, ok := v.DocumentOK()
		if !ok {
			continue
		}
		for _, k := range []string{"$lookup", "$graphLookup"} {
			if from, ok := st.Lookup(k, "from").StringValueOK(); ok {
				out = append(out, c.db+"."+from)
			}
		}
		if coll, ok := st.Lookup("$unionWith").StringValueOK(); ok {
			out = append(out, c.db+"."+coll)
		} else if coll, ok := st.Lookup("$unionWith", "coll").StringValueOK(); ok {
			out = append(out, c.db+"."+coll)
		}
	}
	return out
}

func (g *Gate) log() *slog.Logger {
	if g.Log == nil {
		return slog.Default()
	}
	return g.Log
}
