package wiregate

import (
	"bufio"
	"encoding/binary"
	"net"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/bson"
)

// findOf builds a find command on collection c.
func findOf(t *testing.T, extra ...bson.E) []byte {
	t.Helper()
	cmd := append(bson.D{{Key: "find", Value: "c"}}, extra...)
	return opMsgOf(t, 0, append(cmd, bson.E{Key: "$db", Value: "d"}), false)
}

// batchOf is FerretDB's answer to a find: docs, and a cursor id.
func batchOf(docs bson.A, id int64) bson.D {
	return bson.D{{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: docs}, {Key: "id", Value: id}, {Key: "ns", Value: "d.c"}}}, {Key: "ok", Value: 1.0}}
}

// exchangeWith runs one exchange of req through a gate in front of a fake
// FerretDB answering with answer (given the command's body, and an
// update's statements); it returns the client's answer and the bodies
// FerretDB got.
func exchangeWith(t *testing.T, req []byte, answer func(body bson.Raw, stmts []bson.Raw) bson.D) (bson.Raw, []bson.Raw) {
	t.Helper()
	gateSide, ferretSide := net.Pipe()
	var got []bson.Raw
	go serveFake(ferretSide, func(r []byte) []byte {
		if u, ok := parseUpdate(r); ok {
			return replyTo(t, r, answer(u.body, u.stmts))
		}
		body, ok := msgBody(r)
		if !ok {
			t.Errorf("FerretDB got a request that is not a one-section OP_MSG")
			return nil
		}
		got = append(got, body)
		return replyTo(t, r, answer(body, nil))
	})
	clientSide, clientPeer := net.Pipe()
	g := &Gate{}
	go func() {
		if err := g.exchange(req, gateSide, bufio.NewReader(gateSide), clientSide); err != nil {
			t.Error(err)
		}
	}()
	resp, err := readMessage(bufio.NewReader(clientPeer))
	if err != nil {
		t.Fatal(err)
	}
	if id := int32(binary.LittleEndian.Uint32(req[4:8])); responseTo(resp) != id {
		t.Errorf("answer to request %d, want %d", responseTo(resp), id)
	}
	body, ok := msgBody(resp)
	if !ok {
		t.Fatal("the answer is not a one-section OP_MSG")
	}
	return body, got
}

// byValue answers a find of {f: v} with the documents docs[v].
func byValue(field string, docs map[string]bson.A) func(bson.Raw, []bson.Raw) bson.D {
	return func(body bson.Raw, _ []bson.Raw) bson.D {
		v, ok := body.Lookup("filter", field).StringValueOK()
		if !ok {
			return batchOf(bson.A{bson.D{{Key: "_id", Value: "whole"}}}, 0) // the find as the client sent it
		}
		return batchOf(docs[v], 0)
	}
}

func ids(t *testing.T, answer bson.Raw) string {
	t.Helper()
	vals, err := answer.Lookup("cursor", "firstBatch").Array().Values()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range vals {
		out = append(out, v.Document().Lookup("_id").StringValue())
	}
	return strings.Join(out, ",")
}

// TestFindInOneLookupPerValue: a find on an $in of a few values is one
// find per value for FerretDB (each an equality, with the rest of the
// filter, the projection, and one batch), and one answer for the client,
// each document once.
func TestFindInOneLookupPerValue(t *testing.T) {
	docs := map[string]bson.A{
		"a": {bson.D{{Key: "_id", Value: "1"}}, bson.D{{Key: "_id", Value: "2"}}},
		"b": {bson.D{{Key: "_id", Value: "2"}}, bson.D{{Key: "_id", Value: "3"}}},
	}
	req := findOf(t,
		bson.E{Key: "filter", Value: bson.D{{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{"a", "b", "a"}}}}, {Key: "x", Value: bson.D{{Key: "$exists", Value: false}}}}},
		bson.E{Key: "projection", Value: bson.D{{Key: "outbox", Value: 0}}})
	answer, got := exchangeWith(t, req, byValue("tags", docs))
	if len(got) != 2 {
		t.Fatalf("FerretDB got %d finds, want 2 (a and b, once each)", len(got))
	}
	for i, want := range []string{"a", "b"} {
		f := got[i]
		if v, _ := f.Lookup("filter", "tags").StringValueOK(); v != want {
			t.Errorf("find %d: filter %s, want tags: %q", i, f.Lookup("filter"), want)
		}
		if _, err := f.LookupErr("filter", "x", "$exists"); err != nil {
			t.Errorf("find %d lost the rest of the filter: %s", i, f.Lookup("filter"))
		}
		if _, err := f.LookupErr("projection", "outbox"); err != nil || !f.Lookup("singleBatch").Boolean() {
			t.Errorf("find %d: projection or singleBatch missing: %s", i, f)
		}
	}
	if got := ids(t, answer); got != "1,2,3" {
		t.Errorf("the client got %s, want 1,2,3 (document 2 once)", got)
	}
	if id := answer.Lookup("cursor", "id").Int64(); id != 0 {
		t.Errorf("cursor id %d, want 0", id)
	}
}

// TestFindSentWholeWhenUnsure: what the split cannot answer as MongoDB
// would goes to FerretDB as the client sent it.
func TestFindSentWholeWhenUnsure(t *testing.T) {
	many := bson.A{}
	for i := range maxSplit + 1 {
		many = append(many, string(rune('a'+i)))
	}
	in := func(vals bson.A) bson.E {
		return bson.E{Key: "filter", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: vals}}}}}
	}
	for _, tc := range []struct {
		name string
		req  []byte
		// what FerretDB answers to one value's find
		part bson.D
	}{
		{"a sort", findOf(t, in(bson.A{"a", "b"}), bson.E{Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}}), nil},
		{"a limit", findOf(t, in(bson.A{"a", "b"}), bson.E{Key: "limit", Value: int64(1)}), nil},
		{"too many values", findOf(t, in(many)), nil},
		{"a value that is not a scalar", findOf(t, in(bson.A{"a", bson.D{{Key: "x", Value: 1}}})), nil},
		{"_id left out of a non-_id split", findOf(t,
			bson.E{Key: "filter", Value: bson.D{{Key: "tags", Value: bson.D{{Key: "$in", Value: bson.A{"a"}}}}}},
			bson.E{Key: "projection", Value: bson.D{{Key: "_id", Value: 0}}}), nil},
		{"a value's find left a cursor open", findOf(t, in(bson.A{"a", "b"})), batchOf(bson.A{}, 7)},
		{"a value's find failed", findOf(t, in(bson.A{"a", "b"})), bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "no"}, {Key: "code", Value: int32(2)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer, got := exchangeWith(t, tc.req, func(body bson.Raw, _ []bson.Raw) bson.D {
				if _, err := body.LookupErr("singleBatch"); err == nil && tc.part != nil {
					return tc.part
				}
				return batchOf(bson.A{bson.D{{Key: "_id", Value: "whole"}}}, 0)
			})
			if ids(t, answer) != "whole" {
				t.Errorf("the client got %s, want FerretDB's answer to its find as sent", answer)
			}
			last := got[len(got)-1]
			if _, err := last.LookupErr("singleBatch"); err == nil {
				t.Errorf("the last find FerretDB got was not the client's: %s", last)
			}
		})
	}
}

// TestUpdateManyOnIDsOneStatementPerID: an update of many documents on an
// _id $in is one statement per id; the client gets the sums, errors under
// its statement's index.
func TestUpdateManyOnIDsOneStatementPerID(t *testing.T) {
	stmt := func(multi, upsert bool) bson.D {
		return bson.D{
			{Key: "q", Value: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: bson.A{"a", "b", "c"}}}}, {Key: "seq", Value: bson.D{{Key: "$gt", Value: 0}}}}},
			{Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "held", Value: true}}}}},
			{Key: "multi", Value: multi}, {Key: "upsert", Value: upsert},
		}
	}
	cmd := func(stmts ...bson.D) []byte {
		a := bson.A{}
		for _, s := range stmts {
			a = append(a, s)
		}
		return opMsgOf(t, 0, bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: a}, {Key: "ordered", Value: false}, {Key: "$db", Value: "d"}}, false)
	}
	for _, tc := range []struct {
		name  string
		req   []byte
		sent  []string // the q._id of each statement FerretDB got ("$in": not split)
		wantN int32
		// index of the writeError, -1 for none
		wantErr int32
	}{
		{"many on ids", cmd(stmt(true, false)), []string{"a", "b", "c"}, 2, -1},
		{"one document: not split", cmd(stmt(false, false)), []string{"$in"}, 1, -1},
		{"an upsert: not split", cmd(stmt(true, true)), []string{"$in"}, 1, -1},
		{"a statement ends at its first error", cmd(stmt(false, false), stmt(true, false)), []string{"$in", "a", "b"}, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sent []string
			answer, _ := exchangeWith(t, tc.req, func(_ bson.Raw, stmts []bson.Raw) bson.D {
				if len(stmts) != 1 {
					t.Errorf("FerretDB got %d statements in one update, want 1", len(stmts))
				}
				q := stmts[0].Lookup("q", "_id")
				if v, ok := q.StringValueOK(); ok {
					sent = append(sent, v)
					switch {
					case v == "b" && tc.wantErr >= 0:
						return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "bad"}, {Key: "code", Value: int32(2)}}
					case v == "c": // gone
						return bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, {Key: "ok", Value: 1.0}}
					}
				} else {
					sent = append(sent, "$in")
				}
				return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
			})
			if strings.Join(sent, ",") != strings.Join(tc.sent, ",") {
				t.Errorf("FerretDB got statements on %v, want %v", sent, tc.sent)
			}
			if n := answer.Lookup("n").Int32(); n != tc.wantN {
				t.Errorf("n = %d, want %d (%s)", n, tc.wantN, answer)
			}
			errs, hasErrs := answer.Lookup("writeErrors").ArrayOK()
			switch {
			case tc.wantErr < 0 && hasErrs:
				t.Errorf("writeErrors %s, want none", errs)
			case tc.wantErr >= 0:
				vals, _ := errs.Values()
				if len(vals) != 1 || vals[0].Document().Lookup("index").Int32() != tc.wantErr {
					t.Errorf("writeErrors %s, want one, for statement %d", errs, tc.wantErr)
				}
			}
		})
	}
}
