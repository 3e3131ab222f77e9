package wiregate

import (
	"bufio"
	"encoding/binary"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
)

// opMsgOf builds an OP_MSG whose body is doc, after an optional document
// sequence section (drivers send bulk documents that way).
func opMsgOf(t *testing.T, flags uint32, doc bson.D, withSequence bool) []byte {
	t.Helper()
	b, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	body := binary.LittleEndian.AppendUint32(nil, flags)
	if withSequence {
		one, _ := bson.Marshal(bson.D{{Key: "q", Value: 1}})
		seq := append([]byte("updates\x00"), one...)
		body = append(body, 1)
		body = binary.LittleEndian.AppendUint32(body, uint32(4+len(seq)))
		body = append(body, seq...)
	}
	body = append(body, 0)
	body = append(body, b...)
	return wireMsg(7, 0, opMsg, body)
}

// wireMsg puts a message header before body.
func wireMsg(requestID, responseTo int32, op uint32, body []byte) []byte {
	msg := binary.LittleEndian.AppendUint32(nil, uint32(headerLen+len(body)))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(requestID))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(responseTo))
	msg = binary.LittleEndian.AppendUint32(msg, op)
	return append(msg, body...)
}

func TestClassify(t *testing.T) {
	cases := []struct {
		doc        bson.D
		flags      uint32
		seq        bool
		write      bool
		moreToCome bool
	}{
		{doc: bson.D{{Key: "find", Value: "c"}}},
		{doc: bson.D{{Key: "getMore", Value: int64(1)}}},
		{doc: bson.D{{Key: "hello", Value: 1}}},
		{doc: bson.D{{Key: "update", Value: "c"}}, seq: true, write: true},
		{doc: bson.D{{Key: "findAndModify", Value: "c"}}, write: true},
		{doc: bson.D{{Key: "createIndexes", Value: "c"}}, write: true},
		{doc: bson.D{{Key: "somethingNew", Value: 1}}, write: true},
		{doc: bson.D{{Key: "insert", Value: "c"}}, flags: flagMoreToCome, write: true, moreToCome: true},
	}
	for _, c := range cases {
		name := c.doc[0].Key
		got, write, more := classify(opMsgOf(t, c.flags, c.doc, c.seq))
		if got != name || write != c.write || more != c.moreToCome {
			t.Errorf("%s: %q write=%v moreToCome=%v, want %v %v", name, got, write, more, c.write, c.moreToCome)
		}
	}
	for _, c := range []struct {
		ns    string
		query bson.D
		write bool
	}{
		// The Go driver's handshake on every new connection: it must not
		// wait for the writes under way.
		{"admin.$cmd", bson.D{{Key: "isMaster", Value: 1}, {Key: "helloOk", Value: true}}, false},
		{"admin.$cmd", bson.D{{Key: "$query", Value: bson.D{{Key: "hello", Value: 1}}}}, false},
		{"db.$cmd", bson.D{{Key: "insert", Value: "c"}}, true},
		{"db.coll", bson.D{{Key: "isMaster", Value: 1}}, true}, // not a command
	} {
		if _, write, _ := classify(opQueryOf(t, c.ns, c.query)); write != c.write {
			t.Errorf("OP_QUERY %s %v: write=%v, want %v", c.ns, c.query, write, c.write)
		}
	}
	if _, write, _ := classify([]byte{16, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0xd4, 0x07, 0, 0}); !write {
		t.Error("an OP_QUERY that cannot be read must be treated as a write")
	}
}

// opQueryOf builds a legacy OP_QUERY of query on the namespace ns.
func opQueryOf(t *testing.T, ns string, query bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(query)
	if err != nil {
		t.Fatal(err)
	}
	body := binary.LittleEndian.AppendUint32(nil, 0) // flags
	body = append(body, ns+"\x00"...)
	body = binary.LittleEndian.AppendUint32(body, 0)          // numberToSkip
	body = binary.LittleEndian.AppendUint32(body, 0xffffffff) // numberToReturn: -1
	body = append(body, b...)
	return wireMsg(1, 0, opQuery, body)
}

// fakeFerret answers every request on conn after delay, with {ok: 1}, and
// records how many requests it was handling at once.
func fakeFerret(t *testing.T, conn net.Conn, delay time.Duration, busy, most *atomic.Int32) {
	t.Helper()
	r := bufio.NewReader(conn)
	ok := opMsgOf(t, 0, bson.D{{Key: "ok", Value: 1.0}}, false)
	for {
		req, err := readMessage(r)
		if err != nil {
			return
		}
		n := busy.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(delay)
		busy.Add(-1)
		if msgMoreToCome(req) {
			continue
		}
		if _, err := conn.Write(ok); err != nil {
			return
		}
	}
}

// TestWritesRunAlone: two connections writing at once reach FerretDB one
// after the other; reads do not wait.
func TestWritesRunAlone(t *testing.T) {
	for _, tc := range []struct {
		cmd      string
		off      bool
		wantMost int32
	}{
		{"update", false, 1},
		{"find", false, 2},
		{"update", true, 2},
	} {
		var busy, most atomic.Int32
		g := &Gate{Off: tc.off}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 2 {
			gateSide, ferretSide := net.Pipe()
			clientSide, clientPeer := net.Pipe()
			go fakeFerret(t, ferretSide, 50*time.Millisecond, &busy, &most)
			go func() { _, _ = bufio.NewReader(clientPeer).Discard(1 << 20) }()
			wg.Go(func() {
				<-start
				req := opMsgOf(t, 0, bson.D{{Key: tc.cmd, Value: "c"}}, false)
				if err := g.exchange(req, gateSide, bufio.NewReader(gateSide), clientSide); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := most.Load(); got != tc.wantMost {
			t.Errorf("%s (gate off: %v): %d at once in FerretDB, want %d", tc.cmd, tc.off, got, tc.wantMost)
		}
	}
}

// TestUnacknowledgedWriteHoldsTheLockUntilDone: a write that expects no
// answer (moreToCome) keeps the lock until a ping sent after it returns,
// and what FerretDB answers to it (v1 answers every message) never reaches
// the client, whose next command gets its own answer.
func TestUnacknowledgedWriteHoldsTheLockUntilDone(t *testing.T) {
	for _, answers := range []bool{true, false} { // FerretDB v1; MongoDB
		gateSide, ferretSide := socketPair(t) // buffered, as a real socket
		var got []string
		go serveFake(ferretSide, func(req []byte) []byte {
			name, _ := commandName(req)
			got = append(got, name)
			if msgMoreToCome(req) && !answers {
				return nil
			}
			return replyTo(t, req, bson.D{{Key: "answer", Value: name}, {Key: "ok", Value: 1.0}})
		})
		clientSide, clientPeer := net.Pipe()
		g := &Gate{}
		ur := bufio.NewReader(gateSide)
		req := opMsgOf(t, flagMoreToCome, bson.D{{Key: "insert", Value: "c"}}, false)
		if err := g.exchange(req, gateSide, ur, clientSide); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, ",") != "insert,ping" {
			t.Errorf("FerretDB got %v, want the insert then the gate's ping", got)
		}
		if !g.locks.all.TryLock() {
			t.Fatal("the lock is still held after the ping's answer")
		}
		g.locks.all.Unlock()
		go func() {
			_ = g.exchange(opMsgOf(t, 0, bson.D{{Key: "find", Value: "c"}}, false), gateSide, ur, clientSide)
		}()
		resp, err := readMessage(bufio.NewReader(clientPeer))
		if err != nil {
			t.Fatal(err)
		}
		if body := bson.Raw(resp[headerLen+5:]); body.Lookup("answer").StringValue() != "find" {
			t.Errorf("FerretDB answering w:0 writes: %v; the find got %v, want the find's answer", answers, body)
		}
	}
}

// serveFake plays FerretDB on conn: it answers each message with
// answer(message), or not at all when that is nil.
func serveFake(conn net.Conn, answer func(req []byte) []byte) {
	r := bufio.NewReader(conn)
	for {
		req, err := readMessage(r)
		if err != nil {
			return
		}
		if resp := answer(req); resp != nil {
			if _, err := conn.Write(resp); err != nil {
				return
			}
		}
	}
}

// socketPair returns two ends of a loopback TCP connection.
func socketPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	a, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// replyTo builds an answer to req.
func replyTo(t *testing.T, req []byte, doc bson.D) []byte {
	t.Helper()
	b, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte{0, 0, 0, 0, 0}, b...) // flags, section kind 0
	return wireMsg(1, int32(binary.LittleEndian.Uint32(req[4:8])), opMsg, body)
}

// updateOf builds an update command of n statements {q: {_id: i}}, in a
// document sequence (as drivers send them) or in the body.
func updateOf(t *testing.T, n int, ordered, inBody bool) []byte {
	t.Helper()
	var stmts bson.A
	var seq []byte
	for i := range n {
		stmt := bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: int32(i)}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}}
		stmts = append(stmts, stmt)
		b, _ := bson.Marshal(stmt)
		seq = append(seq, b...)
	}
	cmd := bson.D{{Key: "update", Value: "c"}, {Key: "ordered", Value: ordered}, {Key: "$db", Value: "d"}}
	if inBody {
		cmd = append(cmd, bson.E{Key: "updates", Value: stmts})
	}
	b, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	body := binary.LittleEndian.AppendUint32(nil, 0)
	body = append(body, 0)
	body = append(body, b...)
	if !inBody {
		body = append(body, 1)
		body = binary.LittleEndian.AppendUint32(body, uint32(4+len("updates\x00")+len(seq)))
		body = append(body, "updates\x00"...)
		body = append(body, seq...)
	}
	return wireMsg(42, 0, opMsg, body)
}

// TestUpdateStatementsOneByOne: FerretDB gets one statement per command;
// the client gets MongoDB's answer to its whole command.
func TestUpdateStatementsOneByOne(t *testing.T) {
	duplicate := bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: `ERROR: duplicate key value violates unique constraint "k" (SQLSTATE 23505)`}, {Key: "code", Value: int32(1)}, {Key: "codeName", Value: "InternalError"}}
	for _, tc := range []struct {
		name    string
		ordered bool
		inBody  bool
		// FerretDB's answer to the statement on _id i
		answer func(i int32) bson.D
		sent   int
		want   string
	}{
		{"all done", true, false, func(i int32) bson.D {
			return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
		}, 3, `{"n": {"$numberInt":"3"},"nModified": {"$numberInt":"3"},"ok": {"$numberDouble":"1.0"}}`},
		{"statements in the body", true, true, func(i int32) bson.D {
			return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
		}, 3, `{"n": {"$numberInt":"3"},"nModified": {"$numberInt":"3"},"ok": {"$numberDouble":"1.0"}}`},
		{"upsert numbered by statement", true, false, func(i int32) bson.D {
			if i == 2 {
				return bson.D{{Key: "n", Value: int32(1)}, {Key: "upserted", Value: bson.A{bson.D{{Key: "index", Value: int32(0)}, {Key: "_id", Value: "x"}}}}, {Key: "nModified", Value: int32(0)}, {Key: "ok", Value: 1.0}}
			}
			return bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, {Key: "ok", Value: 1.0}}
		}, 3, `{"n": {"$numberInt":"1"},"upserted": [{"index": {"$numberInt":"2"},"_id": "x"}],"nModified": {"$numberInt":"0"},"ok": {"$numberDouble":"1.0"}}`},
		{"ordered stops at a duplicate", true, false, func(i int32) bson.D {
			if i == 1 {
				return duplicate
			}
			return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
		}, 2, `{"n": {"$numberInt":"1"},"nModified": {"$numberInt":"1"},"writeErrors": [{"index": {"$numberInt":"1"},"code": {"$numberInt":"11000"},"errmsg": "E11000 duplicate key error (FerretDB: ERROR: duplicate key value violates unique constraint \"k\" (SQLSTATE 23505))"}],"ok": {"$numberDouble":"1.0"}}`},
		{"unordered goes on", false, false, func(i int32) bson.D {
			if i == 1 {
				return bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, {Key: "writeErrors", Value: bson.A{bson.D{{Key: "index", Value: int32(0)}, {Key: "code", Value: int32(14)}, {Key: "errmsg", Value: "type"}}}}, {Key: "ok", Value: 1.0}}
			}
			return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
		}, 3, `{"n": {"$numberInt":"2"},"nModified": {"$numberInt":"2"},"writeErrors": [{"index": {"$numberInt":"1"},"code": {"$numberInt":"14"},"errmsg": "type"}],"ok": {"$numberDouble":"1.0"}}`},
		{"a command error is the command's", true, false, func(i int32) bson.D {
			return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "Invalid namespace"}, {Key: "code", Value: int32(73)}}
		}, 1, `{"ok": {"$numberDouble":"0.0"},"errmsg": "Invalid namespace","code": {"$numberInt":"73"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gateSide, ferretSide := net.Pipe()
			sent := 0
			go serveFake(ferretSide, func(req []byte) []byte {
				u, ok := parseUpdate(req)
				if !ok || len(u.stmts) != 1 {
					t.Errorf("FerretDB got an update it cannot read, or of several statements")
					return nil
				}
				sent++
				return replyTo(t, req, tc.answer(u.stmts[0].Lookup("q", "_id").Int32()))
			})
			clientSide, clientPeer := net.Pipe()
			g := &Gate{}
			go func() {
				if err := g.exchange(updateOf(t, 3, tc.ordered, tc.inBody), gateSide, bufio.NewReader(gateSide), clientSide); err != nil {
					t.Error(err)
				}
			}()
			resp, err := readMessage(bufio.NewReader(clientPeer))
			if err != nil {
				t.Fatal(err)
			}
			body, ok := msgBody(resp)
			if !ok {
				t.Fatal("the answer is not a one-section OP_MSG")
			}
			if got := body.String(); got != tc.want {
				t.Errorf("answer %s,\nwant %s", got, tc.want)
			}
			if responseTo(resp) != 42 {
				t.Errorf("answer to request %d, want 42", responseTo(resp))
			}
			if sent != tc.sent {
				t.Errorf("FerretDB got %d statements, want %d", sent, tc.sent)
			}
		})
	}
}
