package mongox_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/testkit"
)

// The transaction contract: what the services rely on when they write in
// a transaction. It runs against the development database (the write gate
// in front of FerretDB) and, with TEST_MONGODB_URI, against a real MongoDB
// replica set; both must pass it.

// txFixture is a fresh database with one collection holding a seed
// document, and a second client (another session, as another replica of
// a service would be).
type txFixture struct {
	ctx    context.Context
	uri    string
	coll   *mongo.Collection
	client *mongo.Client
	other  *mongo.Collection
}

func newTxFixture(t *testing.T) txFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	db := testkit.Mongo(t)
	coll := db.Collection("docs")
	// Collections are made before the transactions, as the services make
	// theirs at start-up.
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "seed"}, {Key: "n", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	uri := testkit.MongoURI(t)
	other := connect(t, uri)
	return txFixture{ctx: ctx, uri: uri, coll: coll, client: db.Client(), other: other.Database(db.Name()).Collection("docs")}
}

// docs is the fixture's collection as client c reaches it.
func (f txFixture) docs(c *mongo.Client) *mongo.Collection {
	return c.Database(f.coll.Database().Name()).Collection(f.coll.Name())
}

// begin starts a transaction on a session of c, ended with the test, and
// returns the context its commands run in.
func (f txFixture) begin(t *testing.T, c *mongo.Client) (context.Context, *mongo.Session) {
	t.Helper()
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		sess.EndSession(ctx)
	})
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	return mongo.NewSessionContext(f.ctx, sess), sess
}

func connect(t *testing.T, uri string) *mongo.Client {
	t.Helper()
	c, err := mongox.Connect(uri)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// all returns every document of coll, by _id.
func all(t *testing.T, ctx context.Context, coll *mongo.Collection) map[string]bson.M {
	t.Helper()
	docs, err := read(ctx, coll, 0)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// read returns every document of coll by _id, in batches of batch (0:
// the server's), for goroutines other than the test's.
func read(ctx context.Context, coll *mongo.Collection, batch int32) (map[string]bson.M, error) {
	opts := options.Find()
	if batch > 0 {
		opts.SetBatchSize(batch)
	}
	cur, err := coll.Find(ctx, bson.D{}, opts)
	if err != nil {
		return nil, err
	}
	return drain(ctx, cur)
}

func drain(ctx context.Context, cur *mongo.Cursor) (map[string]bson.M, error) {
	var docs []bson.M
	if err := cur.All(ctx, &docs); err != nil {
		return nil, err
	}
	out := map[string]bson.M{}
	for _, d := range docs {
		out[d["_id"].(string)] = d
	}
	return out, nil
}

func n(doc bson.M) int64 {
	switch v := doc["n"].(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return -1
}

func TestTransactionsAreAvailable(t *testing.T) {
	f := newTxFixture(t)
	if err := mongox.CheckTransactions(f.ctx, f.client); err != nil {
		t.Fatal(err)
	}
}

// TestTransactionCommitIsSeenWhole: another session reads none of a
// transaction's writes before its commit (at once: the state before it)
// and all of them after.
func TestTransactionCommitIsSeenWhole(t *testing.T) {
	f := newTxFixture(t)
	sctx, sess := f.begin(t, f.client)
	if _, err := f.coll.InsertMany(sctx, []any{bson.D{{Key: "_id", Value: "a"}}, bson.D{{Key: "_id", Value: "b"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.coll.UpdateByID(sctx, "seed", bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 5*time.Second)
	defer cancel()
	if during := all(t, ctx, f.other); len(during) != 1 || n(during["seed"]) != 0 {
		t.Errorf("another session read %v during the transaction: want the seed alone, n 0", during)
	}
	if err := sess.CommitTransaction(f.ctx); err != nil {
		t.Fatal(err)
	}
	if after := all(t, f.ctx, f.other); len(after) != 3 || n(after["seed"]) != 1 {
		t.Errorf("after the commit another session reads %v, want seed (n 1), a and b", after)
	}
}

// TestManyReadersDuringATransaction: 50 readers of another client, more
// than its pool of 8 connections, read a collection while a transaction
// keeps writing it; each reads the state before the transaction or after
// its commit, never one between, and the transaction commits (a deadlock
// would outlast its lifetime and abort it).
func TestManyReadersDuringATransaction(t *testing.T) {
	f := newTxFixture(t)
	before := all(t, f.ctx, f.coll)
	readers := poolOf(t, f, 8)
	const rounds = 6
	after := func(docs map[string]bson.M) bool {
		for i := range rounds {
			if _, ok := docs[fmt.Sprintf("w%d", i)]; !ok {
				return false
			}
		}
		return len(docs) == rounds+1 && n(docs["seed"]) == rounds
	}
	var stop, writing atomic.Bool
	var during atomic.Int64
	var wg sync.WaitGroup
	for i := range 50 {
		batch := int32(0)
		if i%5 == 0 {
			batch = 2 // a getMore per two documents
		}
		wg.Go(func() {
			for !stop.Load() {
				started := writing.Load()
				docs, err := read(f.ctx, readers, batch)
				switch {
				case err != nil:
					t.Errorf("a read during the transaction: %v", err)
					return
				case sameDocs(docs, before):
					if started {
						during.Add(1)
					}
				case !after(docs):
					t.Errorf("a read during the transaction saw %v: neither the state before it nor after", docs)
					return
				}
			}
		})
	}
	err := mongox.InTx(f.ctx, f.client, func(ctx context.Context) error {
		for i := range rounds {
			if _, err := f.coll.InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("w%d", i)}}); err != nil {
				return err
			}
			if _, err := f.coll.UpdateByID(ctx, "seed", bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
				return err
			}
			writing.Store(true)
			time.Sleep(20 * time.Millisecond) // readers read meanwhile
		}
		return nil
	})
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatalf("the transaction among the readers: %v", err)
	}
	if during.Load() == 0 {
		t.Error("no read ran during the transaction: the test proves nothing")
	}
	if docs := all(t, f.ctx, f.other); !after(docs) {
		t.Errorf("after the commit: %v, want the seed at n %d and %d more", docs, rounds, rounds)
	}
}

// poolOf returns f's collection through a client of its own with at most
// size pooled connections.
func poolOf(t *testing.T, f txFixture, size uint64) *mongo.Collection {
	t.Helper()
	c, err := mongo.Connect(options.Client().ApplyURI(f.uri).SetMaxPoolSize(size))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return f.docs(c)
}

// TestTransactionAbortRestores: inserts, updates, upserts and deletes of
// an aborted transaction leave no trace.
func TestTransactionAbortRestores(t *testing.T) {
	f := newTxFixture(t)
	if _, err := f.coll.InsertOne(f.ctx, bson.D{{Key: "_id", Value: "gone"}, {Key: "n", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	before := all(t, f.ctx, f.coll)
	sctx, sess := f.begin(t, f.client)
	steps := []func() error{
		func() error { _, err := f.coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "new"}}); return err },
		func() error {
			_, err := f.coll.UpdateByID(sctx, "seed", bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 5}}}})
			return err
		},
		func() error {
			_, err := f.coll.UpdateOne(sctx, bson.D{{Key: "_id", Value: "upserted"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}, options.UpdateOne().SetUpsert(true))
			return err
		},
		func() error { _, err := f.coll.DeleteOne(sctx, bson.D{{Key: "_id", Value: "gone"}}); return err },
		func() error {
			return f.coll.FindOneAndUpdate(sctx, bson.D{{Key: "_id", Value: "new"}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 3}}}}).Err()
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if err := sess.AbortTransaction(f.ctx); err != nil {
		t.Fatal(err)
	}
	if after := all(t, f.ctx, f.other); !sameDocs(before, after) {
		t.Errorf("after the abort: %v, want %v", after, before)
	}
}

func sameDocs(a, b map[string]bson.M) bool { return reflect.DeepEqual(a, b) }

// TestTransactionErrorAborts: a failed write ends the transaction, its
// earlier writes undone; what follows gets NoSuchTransaction, labelled
// transient (session.WithTransaction then runs the callback again).
func TestTransactionErrorAborts(t *testing.T) {
	f := newTxFixture(t)
	sctx, sess := f.begin(t, f.client)
	if _, err := f.coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "first"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "seed"}}); !mongo.IsDuplicateKeyError(err) {
		t.Fatalf("inserting an existing _id: %v, want a duplicate key error", err)
	}
	_, err := f.coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "later"}})
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(251) || !se.HasErrorLabel("TransientTransactionError") {
		t.Fatalf("a write after the failed one: %v, want NoSuchTransaction (251) labelled TransientTransactionError", err)
	}
	_ = sess.AbortTransaction(f.ctx)
	if docs := all(t, f.ctx, f.other); len(docs) != 1 {
		t.Errorf("after the failed transaction: %v, want the seed alone", docs)
	}
}

// TestConcurrentWriterWaits: a write outside the transaction to a
// document it changed waits for its commit and applies after it (MongoDB
// makes it wait on the document's lock, the gate on its write side).
func TestConcurrentWriterWaits(t *testing.T) {
	f := newTxFixture(t)
	sctx, sess := f.begin(t, f.client)
	if _, err := f.coll.UpdateByID(sctx, "seed", bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	var done atomic.Bool
	wrote := make(chan error, 1)
	go func() {
		_, err := f.other.UpdateByID(f.ctx, "seed", bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 10}}}})
		done.Store(true)
		wrote <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if done.Load() {
		t.Fatal("a write to a document the transaction changed finished before its commit")
	}
	if err := sess.CommitTransaction(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if got := n(all(t, f.ctx, f.other)["seed"]); got != 11 {
		t.Errorf("n = %d, want 11 (the transaction's 1, then the waiting write's +10)", got)
	}
}

// TestConcurrentTransactionsBothApply: transactions that read and write
// one document, from two clients at once, each apply once: serialised
// (the gate) or conflicting and retried by WithTransaction (MongoDB).
func TestConcurrentTransactionsBothApply(t *testing.T) {
	f := newTxFixture(t)
	const each = 5
	var wg sync.WaitGroup
	for _, c := range []*mongo.Client{f.client, f.other.Database().Client()} {
		coll := f.docs(c)
		wg.Go(func() {
			for range each {
				if err := increment(f.ctx, c, coll); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := n(all(t, f.ctx, f.other)["seed"]); got != 2*each {
		t.Errorf("n = %d, want %d", got, 2*each)
	}
}

// increment reads n and writes n+1 in one transaction.
func increment(ctx context.Context, c *mongo.Client, coll *mongo.Collection) error {
	sess, err := c.StartSession()
	if err != nil {
		return err
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		var doc bson.M
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "seed"}}).Decode(&doc); err != nil {
			return nil, err
		}
		_, err := coll.UpdateByID(ctx, "seed", bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: n(doc) + 1}}}})
		return nil, err
	})
	return err
}

// TestWithTransactionRetriesAnUnknownCommit: the answer to a commit is
// lost with its connection; WithTransaction commits again and is told it
// committed; the callback ran once and its write is there once.
func TestWithTransactionRetriesAnUnknownCommit(t *testing.T) {
	f := newTxFixture(t)
	p := newCutProxy(t, f.uri)
	p.dropAnswerTo([]byte("commitTransaction"))
	c := p.client(t)
	coll := f.docs(c)
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(f.ctx)
	calls := 0
	_, err = sess.WithTransaction(f.ctx, func(ctx context.Context) (any, error) {
		calls++
		_, err := coll.UpdateByID(ctx, "seed", bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
		return nil, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !p.dropped.Load() {
		t.Fatal("the commit's answer was not dropped: the test proves nothing")
	}
	if got := n(all(t, f.ctx, f.other)["seed"]); calls != 1 || got != 1 {
		t.Errorf("callback ran %d times, n = %d: want 1 and 1", calls, got)
	}
}

// TestRetryableWritesApplyOnce: a write whose answer is lost with its
// connection is sent again by the driver; it is answered as the first
// time and applied once.
func TestRetryableWritesApplyOnce(t *testing.T) {
	f := newTxFixture(t)
	p := newCutProxy(t, f.uri)
	coll := f.docs(p.client(t))

	p.dropAnswerTo([]byte("$inc"))
	if _, err := coll.UpdateByID(f.ctx, "seed", bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if !p.dropped.Swap(false) {
		t.Fatal("the update's answer was not dropped: the test proves nothing")
	}
	if got := n(all(t, f.ctx, f.other)["seed"]); got != 1 {
		t.Errorf("a retried $inc left n = %d, want 1", got)
	}

	p.dropAnswerTo([]byte("retried-insert"))
	if _, err := coll.InsertOne(f.ctx, bson.D{{Key: "_id", Value: "retried-insert"}}); err != nil {
		t.Fatalf("a retried insert: %v, want the first attempt's success", err)
	}
	if !p.dropped.Load() {
		t.Fatal("the insert's answer was not dropped: the test proves nothing")
	}
}

// TestKilledClientsTransactionLeavesNothing: a client that dies with a
// transaction open (its connections gone) leaves none of its writes, and
// other writes go on.
func TestKilledClientsTransactionLeavesNothing(t *testing.T) {
	f := newTxFixture(t)
	p := newCutProxy(t, f.uri)
	c := p.client(t)
	coll := f.docs(c)
	sctx, _ := f.begin(t, c)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "orphan"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateByID(sctx, "seed", bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 99}}}}); err != nil {
		t.Fatal(err)
	}
	p.kill()
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	if _, err := f.other.InsertOne(ctx, bson.D{{Key: "_id", Value: "after"}}); err != nil {
		t.Fatalf("a write after the client died: %v", err)
	}
	docs := all(t, ctx, f.other)
	if _, ok := docs["orphan"]; ok || n(docs["seed"]) != 0 {
		t.Errorf("after the client died: %v, want none of its transaction's writes", docs)
	}
}

// cutProxy stands between a client and the server: it can drop the answer
// to one request (closing that connection, as a network failure would) or
// cut every connection (a killed client).
type cutProxy struct {
	l       net.Listener
	target  string
	mu      sync.Mutex
	conns   []net.Conn
	marker  []byte
	dropped atomic.Bool
	uri     string
}

func newCutProxy(t *testing.T, uri string) *cutProxy {
	t.Helper()
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatal(err)
	}
	target, _, _ := strings.Cut(u.Host, ",")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l, target: target, uri: uri}
	t.Cleanup(p.kill)
	go p.accept()
	return p
}

// client connects through the proxy: directConnection, since the
// server's hello names its own address, not the proxy's.
func (p *cutProxy) client(t *testing.T) *mongo.Client {
	t.Helper()
	opts := options.Client().ApplyURI(p.uri).SetHosts([]string{p.l.Addr().String()}).SetDirect(true).
		SetTimeout(20 * time.Second)
	opts.ReplicaSet = nil
	c, err := mongo.Connect(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = c.Disconnect(ctx)
	})
	return c
}

// dropAnswerTo arms the proxy: the answer to the next request holding
// marker is not delivered, and its connection closes.
func (p *cutProxy) dropAnswerTo(marker []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = marker
}

func (p *cutProxy) kill() {
	_ = p.l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *cutProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		var watch atomic.Int32 // request id whose answer is dropped; 0 when none
		go p.pipe(c, s, func(msg []byte) bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.marker != nil && bytes.Contains(msg, p.marker) {
				p.marker = nil
				watch.Store(int32(binary.LittleEndian.Uint32(msg[4:8])))
			}
			return true
		})
		go p.pipe(s, c, func(msg []byte) bool {
			if id := watch.Load(); id != 0 && int32(binary.LittleEndian.Uint32(msg[8:12])) == id {
				p.dropped.Store(true)
				_ = c.Close()
				_ = s.Close()
				return false
			}
			return true
		})
	}
}

// pipe copies wire messages from src to dst while pass says so.
func (p *cutProxy) pipe(src, dst net.Conn, pass func(msg []byte) bool) {
	defer src.Close()
	defer dst.Close()
	r := bufio.NewReader(src)
	for {
		var h [4]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			return
		}
		msg := make([]byte, binary.LittleEndian.Uint32(h[:]))
		copy(msg, h[:])
		if _, err := io.ReadFull(r, msg[4:]); err != nil {
			return
		}
		if !pass(msg) {
			return
		}
		if _, err := dst.Write(msg); err != nil {
			return
		}
	}
}

// TestACursorReadsOnDuringATransaction: a cursor opened before a
// transaction is read to its end while the transaction, which writes its
// collection, is open (the gate never makes a getMore wait: a cursor left
// half-read could otherwise hold up everything).
func TestACursorReadsOnDuringATransaction(t *testing.T) {
	f := newTxFixture(t)
	var docs []any
	for i := range 50 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("d%02d", i)}})
	}
	if _, err := f.coll.InsertMany(f.ctx, docs); err != nil {
		t.Fatal(err)
	}
	cur, err := f.other.Find(f.ctx, bson.D{}, options.Find().SetBatchSize(2))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close(f.ctx)
	sctx, sess := f.begin(t, f.client)
	if _, err := f.coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "in-transaction"}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	read := 0
	for cur.Next(ctx) {
		if cur.Current.Lookup("_id").StringValue() == "in-transaction" {
			t.Error("a cursor outside the transaction read its uncommitted insert")
		}
		read++
	}
	if err := cur.Err(); err != nil || read != 51 {
		t.Errorf("read %d documents (%v) during the transaction, want all 51 from before it", read, err)
	}
	if err := sess.CommitTransaction(f.ctx); err != nil {
		t.Fatal(err)
	}
}

// TestAGetMoreSpansATransaction: cursors of another session opened before
// a transaction, and during it, are read to their end while it changes,
// adds and deletes their documents, and see none of it.
func TestAGetMoreSpansATransaction(t *testing.T) {
	f := newTxFixture(t)
	var docs []any
	for i := range 20 {
		docs = append(docs, bson.D{{Key: "_id", Value: fmt.Sprintf("d%02d", i)}, {Key: "n", Value: 0}})
	}
	if _, err := f.coll.InsertMany(f.ctx, docs); err != nil {
		t.Fatal(err)
	}
	before := all(t, f.ctx, f.coll)
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	open := func() *mongo.Cursor {
		cur, err := f.other.Find(ctx, bson.D{}, options.Find().SetBatchSize(2))
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	first := open()
	sctx, sess := f.begin(t, f.client)
	if _, err := f.coll.UpdateMany(sctx, bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	second := open()
	if _, err := f.coll.InsertOne(sctx, bson.D{{Key: "_id", Value: "d99"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.coll.DeleteOne(sctx, bson.D{{Key: "_id", Value: "d05"}}); err != nil {
		t.Fatal(err)
	}
	for name, cur := range map[string]*mongo.Cursor{"opened before": first, "opened during": second} {
		if got, err := drain(ctx, cur); err != nil || !sameDocs(got, before) {
			t.Errorf("a cursor %s the transaction read %v (%v), want %v", name, got, err, before)
		}
	}
	if err := sess.CommitTransaction(f.ctx); err != nil {
		t.Fatal(err)
	}
}
