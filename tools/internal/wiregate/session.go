package wiregate

import (
	"bytes"
	"sync"
	"time"
)

// A driver talking to a replica set gives each write a session (lsid) and
// a number (txnNumber): a retryable write, which the driver sends again
// once after a network error or a primary's step-down, and which MongoDB
// then answers with the first attempt's outcome instead of applying it a
// second time. A transaction's commands carry the same two, with
// autocommit: false. The gate keeps, per session, the highest number seen,
// the answer to the last retryable write and the state of its transaction
// (txn.go).

// txnState is what became of a session's highest txnNumber.
type txnState int

const (
	stateNone      txnState = iota // a retryable write, or nothing yet
	stateActive                    // a transaction under way
	stateCommitted                 // a transaction committed
	stateAborted                   // a transaction aborted
)

// session is one logical session's state; mu orders its commands (a
// driver sends one at a time, but a retry may arrive on another connection
// while the first attempt still runs).
type session struct {
	key string
	mu  sync.Mutex

	txnNumber int64
	state     txnState
	txn       *txn   // the transaction under way, nil when none
	written   []byte // the answer to retryable write txnNumber, once it succeeded

	lastUse time.Time // under sessions.mu
}

// sessionIdle is how long the gate remembers a session nobody uses:
// MongoDB's logicalSessionTimeoutMinutes.
const sessionIdle = 30 * time.Minute

type sessions struct {
	mu    sync.Mutex
	m     map[string]*session
	swept time.Time
}

// get returns the session key, remembering it from now on.
func (ss *sessions) get(key string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	now := time.Now()
	if ss.m == nil {
		ss.m = map[string]*session{}
	}
	if now.Sub(ss.swept) > time.Minute {
		ss.swept = now
		for k, s := range ss.m {
			if now.Sub(s.lastUse) > sessionIdle && s.mu.TryLock() {
				if s.txn == nil {
					delete(ss.m, k)
				}
				s.mu.Unlock()
			}
		}
	}
	s := ss.m[key]
	if s == nil {
		s = &session{key: key}
		ss.m[key] = s
	}
	s.lastUse = now
	return s
}

// retryableWrites are the commands a driver retries with the same
// txnNumber.
var retryableWrites = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
}

// retryableWrite runs a write that carries a session and a txnNumber, or
// answers a retry of one with the first attempt's answer.
func (g *Gate) retryableWrite(cc *clientConn, c command, req []byte, u upstream) error {
	s := g.sessions.get(c.lsid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.txn != nil {
		// A higher number ends the session's transaction, as on MongoDB.
		if c.txnNumber <= s.txn.number {
			return cc.reply(errorReply(c.requestID, codeInvalidOptions, "a write outside the session's transaction while it is under way"))
		}
		g.abortTxn(s, &u)
	}
	switch {
	case c.txnNumber < s.txnNumber:
		return cc.reply(errorReply(c.requestID, codeTransactionTooOld, "txnNumber is older than the session's latest"))
	case c.txnNumber == s.txnNumber && s.written != nil:
		return cc.reply(asAnswerTo(s.written, c.requestID))
	case c.txnNumber == s.txnNumber && s.state != stateNone:
		return cc.reply(errorReply(c.requestID, codeInvalidOptions, "txnNumber belongs to a transaction"))
	}
	s.txnNumber, s.state, s.written = c.txnNumber, stateNone, nil
	var rec bytes.Buffer
	if err := g.exchange(withoutFields(req, sessionFields), u.conn, u.r, &rec); err != nil {
		return err
	}
	resp := rec.Bytes()
	if commandOK(resp) {
		// Write errors included (a duplicate key): a retry gets them too.
		s.written = append([]byte(nil), resp...)
	}
	return cc.reply(resp)
}

// commandOK reports an answer with ok: 1, whatever its statements did.
func commandOK(resp []byte) bool {
	body, ok := msgBody(resp)
	if !ok {
		return false
	}
	v, ok := body.Lookup("ok").AsInt32OK()
	return ok && v == 1
}
