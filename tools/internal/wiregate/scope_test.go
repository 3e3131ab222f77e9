package wiregate

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// seqMsgOf builds an OP_MSG with body doc and one document sequence
// section (field: docs), as drivers send bulk writes.
func seqMsgOf(t *testing.T, doc bson.D, field string, docs ...bson.D) []byte {
	t.Helper()
	seq := append([]byte(field), 0)
	for _, d := range docs {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, b...)
	}
	b, err := bson.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	body := binary.LittleEndian.AppendUint32(nil, 0)
	body = append(body, 1)
	body = binary.LittleEndian.AppendUint32(body, uint32(4+len(seq)))
	body = append(body, seq...)
	body = append(body, 0)
	body = append(body, b...)
	return wireMsg(7, 0, opMsg, body)
}

func updateByID(t *testing.T, coll string, ids ...any) []byte {
	var stmts bson.A
	for _, id := range ids {
		stmts = append(stmts, bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}, {Key: "x", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}}})
	}
	return opMsgOf(t, 0, bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: stmts}, {Key: "$db", Value: "d"}}, false)
}

func TestWriteScope(t *testing.T) {
	oid := primitive.NewObjectID()
	for _, tc := range []struct {
		name string
		cmd  string
		req  []byte
		want scope
	}{
		{"update by one _id", "update", updateByID(t, "c", "a"), scope{coll: "d.c", id: "\x02" + string(bsonString("a"))}},
		{"the same _id twice", "update", updateByID(t, "c", "a", "a"), scope{coll: "d.c", id: "\x02" + string(bsonString("a"))}},
		{"two _ids", "update", updateByID(t, "c", "a", "b"), scope{coll: "d.c"}},
		{"an ObjectID", "update", updateByID(t, "c", oid), scope{coll: "d.c", id: "\x07" + string(oid[:])}},
		{"an operator on _id", "update", updateByID(t, "c", bson.D{{Key: "$in", Value: bson.A{"a"}}}), scope{coll: "d.c"}},
		{"statements in a sequence", "update", seqMsgOf(t, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "d"}}, "updates",
			bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "a"}}}, {Key: "u", Value: bson.D{}}}), scope{coll: "d.c", id: "\x02" + string(bsonString("a"))}},
		{"a filter on another field", "update", opMsgOf(t, 0, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "d"},
			{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 1}}}}}}}, false), scope{coll: "d.c"}},
		{"delete by _id", "delete", opMsgOf(t, 0, bson.D{{Key: "delete", Value: "c"}, {Key: "$db", Value: "d"},
			{Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "a"}}}, {Key: "limit", Value: 1}}}}}, false), scope{coll: "d.c", id: "\x02" + string(bsonString("a"))}},
		{"findAndModify by _id", "findAndModify", opMsgOf(t, 0, bson.D{{Key: "findAndModify", Value: "meta"}, {Key: "$db", Value: "d"},
			{Key: "query", Value: bson.D{{Key: "_id", Value: "seq"}}}}, false), scope{coll: "d.meta", id: "\x02" + string(bsonString("seq"))}},
		{"insert", "insert", seqMsgOf(t, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "d"}}, "documents",
			bson.D{{Key: "_id", Value: "a"}}), scope{}},
		{"an upsert", "update", opMsgOf(t, 0, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "d"},
			{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "a"}}}, {Key: "upsert", Value: true}}}}}, false), scope{}},
		{"findAndModify upsert", "findAndModify", opMsgOf(t, 0, bson.D{{Key: "findAndModify", Value: "meta"}, {Key: "$db", Value: "d"},
			{Key: "query", Value: bson.D{{Key: "_id", Value: "seq"}}}, {Key: "upsert", Value: true}}, false), scope{}},
		{"createIndexes", "createIndexes", opMsgOf(t, 0, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "$db", Value: "d"}}, false), scope{}},
		{"dropDatabase", "dropDatabase", opMsgOf(t, 0, bson.D{{Key: "dropDatabase", Value: 1}, {Key: "$db", Value: "d"}}, false), scope{}},
		{"no $db", "update", opMsgOf(t, 0, bson.D{{Key: "update", Value: "c"}}, false), scope{}},
	} {
		if got := writeScope(tc.cmd, tc.req); got != tc.want {
			t.Errorf("%s: scope %q, want %q", tc.name, got, tc.want)
		}
	}
}

func bsonString(s string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(s)+1))
	return append(append(b, s...), 0)
}

// TestWritesToDifferentDocumentsRunTogether: two writes reach FerretDB at
// the same time when they name different documents, one after the other
// when they name the same document or one of them is collection-wide
// (issue 22 item 2).
func TestWritesToDifferentDocumentsRunTogether(t *testing.T) {
	collWide := opMsgOf(t, 0, bson.D{{Key: "update", Value: "c"}, {Key: "$db", Value: "d"},
		{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "x", Value: 1}}}}}}}, false)
	for _, tc := range []struct {
		name     string
		a, b     []byte
		wantMost int32
	}{
		{"different documents", updateByID(t, "c", "a"), updateByID(t, "c", "b"), 2},
		{"different collections", updateByID(t, "c", "a"), updateByID(t, "other", "a"), 2},
		{"the same document", updateByID(t, "c", "a"), updateByID(t, "c", "a"), 1},
		{"a document and its collection", updateByID(t, "c", "a"), collWide, 1},
		{"another collection's collection-wide write", updateByID(t, "other", "a"), collWide, 2},
		{"dropDatabase", updateByID(t, "c", "a"), opMsgOf(t, 0, bson.D{{Key: "dropDatabase", Value: 1}, {Key: "$db", Value: "d"}}, false), 1},
		{"an insert", updateByID(t, "c", "a"), seqMsgOf(t, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "d"}}, "documents", bson.D{{Key: "_id", Value: "b"}}), 1},
	} {
		var busy, most atomic.Int32
		g := &Gate{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, req := range [][]byte{tc.a, tc.b} {
			gateSide, ferretSide := net.Pipe()
			clientSide, clientPeer := net.Pipe()
			go fakeFerret(t, ferretSide, 50*time.Millisecond, &busy, &most)
			go func() { _, _ = bufio.NewReader(clientPeer).Discard(1 << 20) }()
			wg.Go(func() {
				<-start
				if err := g.exchange(req, gateSide, bufio.NewReader(gateSide), clientSide); err != nil {
					t.Error(err)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := most.Load(); got != tc.wantMost {
			t.Errorf("%s: %d at once in FerretDB, want %d", tc.name, got, tc.wantMost)
		}
	}
}
