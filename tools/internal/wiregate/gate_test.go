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
		go func() {
			r := bufio.NewReader(ferretSide)
			for {
				req, err := readMessage(r)
				if err != nil {
					return
				}
				name, _ := commandName(req)
				got = append(got, name)
				if msgMoreToCome(req) && !answers {
					continue
				}
				_, _ = ferretSide.Write(replyTo(t, req, bson.D{{Key: "answer", Value: name}, {Key: "ok", Value: 1.0}}))
			}
		}()
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
		if !g.lock.TryLock() {
			t.Fatal("the lock is still held after the ping's answer")
		}
		g.lock.Unlock()
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

func TestDuplicateKeyAsMongoDB(t *testing.T) {
	internal := opMsgOf(t, 0, bson.D{
		{Key: "ok", Value: 0.0},
		{Key: "errmsg", Value: `[collection.go:218] ERROR: duplicate key value violates unique constraint "c_idx" (SQLSTATE 23505)`},
		{Key: "code", Value: int32(1)},
		{Key: "codeName", Value: "InternalError"},
	}, false)
	out := duplicateKeyAsMongoDB(internal)
	var body bson.D
	if err := bson.Unmarshal(out[headerLen+5:], &body); err != nil {
		t.Fatal(err)
	}
	m := body.Map()
	if m["code"] != int32(11000) || m["codeName"] != "DuplicateKey" || !strings.HasPrefix(m["errmsg"].(string), "E11000 ") {
		t.Errorf("got %v, want a DuplicateKey error", body)
	}
	if n := binary.LittleEndian.Uint32(out[0:4]); int(n) != len(out) {
		t.Errorf("message length %d, want %d", n, len(out))
	}
	other := opMsgOf(t, 0, bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "boom"}, {Key: "code", Value: int32(1)}}, false)
	if string(duplicateKeyAsMongoDB(other)) != string(other) {
		t.Error("an InternalError not caused by a unique index was changed")
	}
}
