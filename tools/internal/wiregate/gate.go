// Package wiregate is a MongoDB wire-protocol proxy that gives FerretDB v1
// MongoDB's single-document atomicity: every write command takes a lock,
// held from the moment the request is forwarded until its answer has come
// back: the lock of the one document it names by _id, else of its
// collection, else of everything (scope.go), so no two writes to one
// document ever run at the same time.
//
// Reads take no lock. They need none (FerretDB writes a document back in
// one SQL statement, so a read sees it whole, before or after), and they
// must not wait: on PostgreSQL a cursor whose rows do not fit in the
// socket's buffers holds a table lock until the client reads it to the
// end, and a dropIndexes (DROP INDEX) waits for that lock inside FerretDB
// while holding the gate. Had the cursor's next getMore, or the handshake
// of a new connection to send it, to wait for the gate, neither would
// ever move. (drop and dropDatabase close the collection's cursors
// first.) The one wait a read knows is for a command of a transaction
// under way (isolation.go), which waits for nothing in FerretDB (a
// transaction runs no DDL); getMore and handshakes never wait.
//
// The gate also answers as a replica set's primary (hello.go), and runs
// sessions' retryable writes (session.go) and transactions (txn.go) on top
// of FerretDB, which has neither.
//
// FerretDB v1 applies an update by reading the document, applying the
// operators in Go and writing the whole document back, outside any lock
// (internal/handler/common/update.go, FerretDB issue #3040): two concurrent
// updates of one document lose one of them, and a conditional update can
// act on a state that no longer holds. MongoDB never does either. Every
// client of the development and test database talks to FerretDB through
// one gate process, so serialising writes there is enough; the services
// themselves keep talking plain MongoDB and need none of this in
// production.
package wiregate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson"
)

// Wire protocol constants (MongoDB's "Wire Protocol" reference).
const (
	headerLen   = 16
	opQuery     = 2004
	opMsg       = 2013
	maxMsgBytes = 48_000_000 // MongoDB's maxMessageSizeBytes

	flagChecksumPresent = 1 << 0
	flagMoreToCome      = 1 << 1
)

// reads are the commands that change nothing: they pass without the lock.
// Anything else, including commands this list does not know, is treated as
// a write and runs alone: the safe side of a mistake is slowness.
var reads = map[string]bool{
	"find": true, "getMore": true, "aggregate": true, "count": true, "distinct": true,
	"listCollections": true, "listIndexes": true, "listDatabases": true, "explain": true,
	"killCursors": true, "endSessions": true,
	"hello": true, "isMaster": true, "ismaster": true, "ping": true, "buildInfo": true, "buildinfo": true,
	"getParameter": true, "getLog": true, "hostInfo": true, "serverStatus": true, "dbStats": true,
	"collStats": true, "dataSize": true, "connectionStatus": true, "whatsmyuri": true,
	"getCmdLineOpts": true, "saslStart": true, "saslContinue": true, "getFreeMonitoringStatus": true,
	"listCommands": true, "validate": true,
}

// Gate forwards client connections to FerretDB, one upstream connection per
// client connection.
type Gate struct {
	// Dial opens a connection to FerretDB (its private socket).
	Dial func(ctx context.Context) (net.Conn, error)
	// Off forwards without taking the lock, to show what the gate prevents.
	Off bool
	Log *slog.Logger
	// Lifetime bounds a transaction: one still under way after it is
	// aborted (MongoDB's transactionLifetimeLimitSeconds; 0 means
	// DefaultLifetime).
	Lifetime time.Duration
	// TTLInterval is how often expired documents of TTL indexes are
	// deleted (ttl.go; 0 means DefaultTTLInterval, MongoDB's 60 s).
	TTLInterval time.Duration

	locks     locks
	slots     chan struct{} // writes in FerretDB at once (maxParallelWrites)
	slotsOnce sync.Once
	writes    atomic.Int64
	upstreams *connSet

	connIDs  atomic.Int64
	sessions sessions
	txMu     sync.Mutex
	active   *txn  // the transaction under way (txn.go)
	turns    turns // reads outside it and its commands (isolation.go)
}

// clientConn is a client's connection as the gate's session code sees it.
type clientConn struct {
	id    int64
	local string // the address the client dialled: hello's me
	w     io.Writer
}

func (cc *clientConn) reply(resp []byte) error {
	_, err := cc.w.Write(resp)
	return err
}

// Writes returns how many write commands went through the gate.
func (g *Gate) Writes() int64 { return g.writes.Load() }

// Serve accepts connections on l until ctx ends or l fails.
func (g *Gate) Serve(ctx context.Context, l net.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	conns := newConnSet()
	defer conns.closeAll()
	g.upstreams = newConnSet()
	defer g.upstreams.closeAll()
	if g.Dial != nil {
		mctx, cancel := context.WithCancel(ctx)
		defer cancel() // before wg.Wait
		wg.Go(func() { g.ttlMonitor(mctx) })
	}
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		conns.add(c)
		wg.Go(func() {
			defer conns.remove(c)
			if err := g.proxy(ctx, c); err != nil && !isClosed(err) {
				g.Log.Debug("gate: connection ended", "error", err)
			}
		})
	}
}

// proxy serves one client connection: read a request, classify it, forward
// it under the lock and relay its answer.
func (g *Gate) proxy(ctx context.Context, client net.Conn) error {
	defer client.Close()
	up, err := g.Dial(ctx)
	if err != nil {
		return fmt.Errorf("dial ferretdb: %w", err)
	}
	defer up.Close()
	// Closed with the client connections when Serve ends, so a proxy
	// waiting for an answer that never comes does not keep it waiting.
	g.upstreams.add(up)
	defer g.upstreams.remove(up)
	cc := &clientConn{id: g.connIDs.Add(1), local: client.LocalAddr().String(), w: client}
	defer g.connGone(cc.id)
	cr := bufio.NewReader(client)
	u := upstream{conn: up, r: bufio.NewReader(up)}
	for {
		req, err := readMessage(cr)
		if err != nil {
			return err
		}
		if err := g.serve(cc, req, u); err != nil {
			return err
		}
	}
}

// serve answers one request: a handshake as a replica set primary's, a
// session's transaction or retryable write (session.go, txn.go), anything
// else as exchange does.
func (g *Gate) serve(cc *clientConn, req []byte, u upstream) error {
	c := parseCommand(req)
	switch {
	case isHello(c.name) && !c.moreToCome:
		if _, err := u.conn.Write(req); err != nil {
			return err
		}
		resp, err := readMessage(u.r)
		if err != nil {
			return err
		}
		return cc.reply(asPrimary(resp, cc.local))
	case c.name == "commitTransaction" || c.name == "abortTransaction":
		return g.endTransaction(cc, c, u)
	case c.inTxn:
		return g.inTransaction(cc, c, req, u)
	case c.hasTxn && c.lsid != "" && retryableWrites[c.name] && !c.moreToCome:
		return g.retryableWrite(cc, c, req, u)
	case ttlCommands[c.name] && c.body != nil && !c.moreToCome:
		return g.ttl(cc, c, req, u)
	}
	if c.hasTxn {
		req = withoutFields(req, sessionFields)
	}
	if !c.write && readNamespaces(c) != nil {
		return g.read(cc, c, req, u)
	}
	return g.exchange(req, u.conn, u.r, cc.w)
}

// read answers a read outside a transaction in its turn (isolation.go),
// which ends once FerretDB has answered: a client slow to read its answer
// keeps no transaction waiting.
func (g *Gate) read(cc *clientConn, c command, req []byte, u upstream) error {
	release, err := g.readTurn(c, u)
	if err != nil {
		g.log().Error("gate: a transaction's writes could not be set aside for a read; it is aborted", "error", err)
		return cc.reply(errorReply(c.requestID, codeInternalError, "setting a transaction's uncommitted writes aside: "+err.Error()))
	}
	var rec bytes.Buffer
	err = g.exchange(req, u.conn, u.r, &rec)
	release()
	if err != nil {
		return err
	}
	return cc.reply(rec.Bytes())
}

// exchange forwards req and relays its answer, under the lock the request
// needs.
func (g *Gate) exchange(req []byte, up net.Conn, ur *bufio.Reader, client io.Writer) error {
	return g.forward(req, up, ur, client, true)
}

// forward forwards req and relays its answer; a write takes its lock
// when lock is set (a transaction's command holds the write side already).
func (g *Gate) forward(req []byte, up net.Conn, ur *bufio.Reader, client io.Writer, lock bool) error {
	name, write, moreToCome := classify(req)
	if name == "find" {
		// A few values of an $in, one index lookup each (in.go).
		if f, ok := parseSplitFind(req); ok {
			resp, done, err := f.run(up, ur)
			if err != nil {
				return err
			}
			if done {
				_, err = client.Write(resp)
				return err
			}
		}
	}
	if write && name == "update" && lock && !moreToCome && !g.Off {
		// An upsert of a document that exists, under its lock only (upsert.go).
		resp, done, err := g.upsertByIDAsUpdate(req, up, ur)
		if err != nil {
			return err
		}
		if done {
			g.writes.Add(1)
			_, err = client.Write(resp)
			return err
		}
	}
	if write && !g.Off {
		defer g.hold(name, req, lock)()
		g.writes.Add(1)
	}
	if write && name == "update" {
		// One statement at a time (update.go).
		if u, ok := parseUpdate(req); ok {
			resp, err := u.run(up, ur)
			if err != nil || moreToCome {
				return err
			}
			_, err = client.Write(resp)
			return err
		}
	}
	if _, err := up.Write(req); err != nil {
		return err
	}
	if moreToCome {
		// The client wants no answer (an unacknowledged write), but
		// FerretDB v1 answers anyway. The answer to a ping sent after it
		// means the write is done (FerretDB handles one connection's
		// messages in order): only then may the lock go. Nothing before
		// that answer may reach the client, whose next command would
		// read it as its own answer.
		return awaitDone(up, ur)
	}
	// One answer, or several when the server streams (moreToCome set on
	// each but the last).
	for {
		resp, err := readMessage(ur)
		if err != nil {
			return err
		}
		resp = asMongoDBError(resp)
		if _, err := client.Write(resp); err != nil {
			return err
		}
		if !msgMoreToCome(resp) {
			return nil
		}
	}
}

// hold takes a write's locks (unless lock is false: its transaction
// holds the write side already), then a slot, and returns their release.
func (g *Gate) hold(name string, req []byte, lock bool) (release func()) {
	unlock := func() {}
	if lock {
		unlock = g.locks.acquire(writeScope(name, req))
	}
	free := g.slot()
	return func() { free(); unlock() }
}

// maxParallelWrites bounds the writes FerretDB runs at once, per CPU. On
// a saturated machine, a hundred writes to different documents let in
// together share the CPU and all finish late (a burst of tag deletions
// timed out at 5 s that way); a few at a time, in order of arrival, keep
// each one short. Taken after the write's locks, so a slot never waits
// for a lock.
const maxParallelWrites = 2

// slot waits for a free slot and returns its release.
func (g *Gate) slot() func() {
	g.slotsOnce.Do(func() { g.slots = make(chan struct{}, maxParallelWrites*runtime.GOMAXPROCS(0)) })
	g.slots <- struct{}{}
	return func() { <-g.slots }
}

// classify returns req's command, whether it must run alone, and whether
// it expects no answer.
func classify(req []byte) (name string, write, moreToCome bool) {
	var ok bool
	switch opCode(req) {
	case opMsg:
		moreToCome = msgMoreToCome(req)
		name, ok = commandName(req)
	case opQuery:
		// A driver's first message on a new connection is its handshake
		// (isMaster or hello) as an OP_QUERY. Were it a write, a new
		// connection would wait for every write under way, and a long one
		// would fail the driver's connection and server checks.
		name, ok = queryCommandName(req)
	default:
		// OP_COMPRESSED (FerretDB offers no compression, so no driver
		// sends it) and the removed legacy opcodes.
	}
	return name, !ok || !reads[name], moreToCome
}

func opCode(msg []byte) int32 { return int32(binary.LittleEndian.Uint32(msg[12:16])) }

func msgMoreToCome(msg []byte) bool {
	return opCode(msg) == opMsg && len(msg) >= headerLen+4 &&
		binary.LittleEndian.Uint32(msg[16:20])&flagMoreToCome != 0
}

// commandName returns the first key of an OP_MSG's body section (kind 0):
// the command.
func commandName(msg []byte) (string, bool) {
	if len(msg) < headerLen+4 {
		return "", false
	}
	flags := binary.LittleEndian.Uint32(msg[16:20])
	end := len(msg)
	if flags&flagChecksumPresent != 0 {
		end -= 4
	}
	for p := headerLen + 4; p < end; {
		kind := msg[p]
		p++
		if p+4 > end {
			return "", false
		}
		size := int(int32(binary.LittleEndian.Uint32(msg[p : p+4])))
		if size < 5 || p+size > end {
			return "", false
		}
		if kind == 0 {
			doc := msg[p : p+size]
			// int32 length, then the first element: type byte, cstring name.
			if len(doc) < 6 || doc[4] == 0 {
				return "", false
			}
			for i := 5; i < len(doc); i++ {
				if doc[i] == 0 {
					return string(doc[5:i]), true
				}
			}
			return "", false
		}
		p += size // kind 1: a document sequence, size included
	}
	return "", false
}

// queryCommandName returns the command of an OP_QUERY on a database's
// $cmd collection: the first key of its query, unwrapped from $query.
func queryCommandName(msg []byte) (string, bool) {
	p := headerLen + 4 // flags
	end := bytes.IndexByte(msg[min(p, len(msg)):], 0)
	if end < 0 || !bytes.HasSuffix(msg[p:p+end], []byte(".$cmd")) {
		return "", false
	}
	p += end + 1 + 8 // numberToSkip, numberToReturn
	if p > len(msg) {
		return "", false
	}
	doc := bson.Raw(msg[p:])
	el, err := doc.IndexErr(0)
	if err != nil {
		return "", false
	}
	if el.Key() == "$query" || el.Key() == "query" {
		inner, ok := el.Value().DocumentOK()
		if !ok {
			return "", false
		}
		if el, err = inner.IndexErr(0); err != nil {
			return "", false
		}
	}
	return el.Key(), true
}

// readMessage reads one whole wire message.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.LittleEndian.Uint32(h[0:4])))
	if n < headerLen || n > maxMsgBytes {
		return nil, fmt.Errorf("wire message of %d bytes", n)
	}
	msg := make([]byte, n)
	copy(msg, h[:])
	if _, err := io.ReadFull(r, msg[headerLen:]); err != nil {
		return nil, err
	}
	return msg, nil
}

// pingRequestID is the request id of pingMsg, one no driver uses (drivers
// count up from 1).
const pingRequestID = 0x7fff_0000

// pingMsg is an OP_MSG {ping: 1, $db: "admin"}.
var pingMsg = func() []byte {
	doc := []byte{}
	doc = append(doc, 0x10) // int32
	doc = append(doc, "ping\x00"...)
	doc = binary.LittleEndian.AppendUint32(doc, 1)
	doc = append(doc, 0x02) // string
	doc = append(doc, "$db\x00"...)
	doc = binary.LittleEndian.AppendUint32(doc, uint32(len("admin")+1))
	doc = append(doc, "admin\x00"...)
	doc = append(doc, 0x00)
	doc = append(binary.LittleEndian.AppendUint32(nil, uint32(len(doc)+4)), doc...)

	body := binary.LittleEndian.AppendUint32(nil, 0) // flags
	body = append(body, 0)                           // section kind 0
	body = append(body, doc...)
	msg := binary.LittleEndian.AppendUint32(nil, uint32(headerLen+len(body)))
	msg = binary.LittleEndian.AppendUint32(msg, pingRequestID)
	msg = binary.LittleEndian.AppendUint32(msg, 0) // response to
	msg = binary.LittleEndian.AppendUint32(msg, opMsg)
	return append(msg, body...)
}()

// awaitDone sends a ping on the upstream connection and swallows every
// answer up to the ping's.
func awaitDone(up net.Conn, ur *bufio.Reader) error {
	if _, err := up.Write(pingMsg); err != nil {
		return err
	}
	for {
		m, err := readMessage(ur)
		if err != nil {
			return err
		}
		if responseTo(m) == pingRequestID {
			return nil
		}
	}
}

func responseTo(msg []byte) int32 { return int32(binary.LittleEndian.Uint32(msg[8:12])) }

func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF)
}

// connSet tracks open client connections so Serve can close them at exit.
type connSet struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

func newConnSet() *connSet { return &connSet{m: map[net.Conn]struct{}{}} }

func (s *connSet) add(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[c] = struct{}{}
}

func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, c)
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.m {
		_ = c.Close()
	}
}
