package wiregate

import (
	"bufio"
	"encoding/binary"
	"net"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// FerretDB v1 on PostgreSQL hands SQL an equality on a top-level field,
// never an $in (internal/backends/postgresql/query.go): a filter such as
// {_id: {$in: [a, b, c]}} reads and decodes every document of the
// collection, where MongoDB makes three index probes. That is how the
// catalog holds and reads the documents a write changes, and how taxonomy
// looks tags up by id: about 20 ms each at 300 documents on these machines
// (growing with the collection) instead of well under a millisecond per
// value. So the gate splits such a filter of a few values into one
// equality per value, which FerretDB sends to its index, and answers as
// MongoDB would:
//
//   - find: one find per value (reads, without the lock, as any read); the
//     answer holds each document found once, in one batch.
//   - update of many documents on _id: one statement per value, under the
//     lock the command holds; a document has one _id, so no document is
//     changed twice, and the counts add up to MongoDB's.
//
// Only what surely means the same is split: at most maxSplit values, each
// a string, an ObjectID or an integer (for these, {f: {$in: [v]}} is
// {f: v}, also on an array field); a find with no sort, skip, limit or
// batch size; an update that is not an upsert. Anything else, or an
// answer the gate does not expect, goes to FerretDB as it came. Larger
// lists stay whole: a scan then costs less than so many lookups.
const maxSplit = 16

// maxSplitBatch bounds what one value's find may return, and
// maxSplitAnswer the answer made of them (MongoDB's limit on a document).
const (
	maxSplitBatch  = 1000
	maxSplitAnswer = 16<<20 - 16<<10
)

// findKeys are the fields of a find command that the split keeps as they
// are; a find with any other (sort, limit, batchSize, hint...) is sent
// whole.
var findKeys = map[string]bool{
	"find": true, "filter": true, "projection": true, "$db": true, "lsid": true, "$readPreference": true,
	"readConcern": true, "comment": true, "maxTimeMS": true, "$clusterTime": true,
}

// inFilter is a filter taken apart around its first top-level $in of few
// scalar values.
type inFilter struct {
	field  string
	values []bson.RawValue
	filter bson.Raw
}

// splitIn finds in filter a top-level field whose condition is only an
// $in of 1 to maxSplit scalar values (duplicates dropped); ok is false
// when there is none. A dotted field is not split: FerretDB's find sends
// no dotted field to SQL.
func splitIn(filter bson.Raw) (inFilter, bool) {
	elems, err := filter.Elements()
	if err != nil {
		return inFilter{}, false
	}
	for _, e := range elems {
		k := e.Key()
		if strings.HasPrefix(k, "$") || strings.Contains(k, ".") {
			continue
		}
		cond, ok := e.Value().DocumentOK()
		if !ok {
			continue
		}
		ops, err := cond.Elements()
		if err != nil || len(ops) != 1 || ops[0].Key() != "$in" {
			continue
		}
		arr, ok := ops[0].Value().ArrayOK()
		if !ok {
			continue
		}
		vals, err := arr.Values()
		if err != nil || len(vals) == 0 || len(vals) > maxSplit {
			continue
		}
		var kept []bson.RawValue
		scalar := true
		for _, v := range vals {
			switch v.Type {
			case bsontype.String, bsontype.ObjectID, bsontype.Int32, bsontype.Int64:
			default:
				scalar = false
			}
			if !containsValue(kept, v) {
				kept = append(kept, v)
			}
		}
		if scalar {
			return inFilter{field: k, values: kept, filter: filter}, true
		}
	}
	return inFilter{}, false
}

func containsValue(vs []bson.RawValue, v bson.RawValue) bool {
	for _, x := range vs {
		if x.Type == v.Type && string(x.Value) == string(v.Value) {
			return true
		}
	}
	return false
}

// with returns the filter with the field's $in replaced by equality to v.
func (f inFilter) with(v bson.RawValue) (bson.Raw, error) {
	elems, _ := f.filter.Elements() // read once in splitIn
	d := make(bson.D, 0, len(elems))
	for _, e := range elems {
		if e.Key() == f.field {
			d = append(d, bson.E{Key: e.Key(), Value: v})
			continue
		}
		d = append(d, bson.E{Key: e.Key(), Value: e.Value()})
	}
	return bson.Marshal(d)
}

// splitFind is a find command whose filter can be split.
type splitFind struct {
	requestID int32
	body      bson.Raw
	in        inFilter
	dedupe    bool // the field is not _id: a document may match two values
}

// parseSplitFind reads a find request that can be split (see above).
func parseSplitFind(req []byte) (*splitFind, bool) {
	if opCode(req) != opMsg || msgMoreToCome(req) {
		return nil, false
	}
	body, ok := msgBody(req)
	if !ok {
		return nil, false
	}
	elems, err := body.Elements()
	if err != nil {
		return nil, false
	}
	var filter, projection bson.Raw
	for _, e := range elems {
		if !findKeys[e.Key()] {
			return nil, false
		}
		switch e.Key() {
		case "filter":
			if filter, ok = e.Value().DocumentOK(); !ok {
				return nil, false
			}
		case "projection":
			projection, _ = e.Value().DocumentOK()
		}
	}
	if filter == nil {
		return nil, false
	}
	in, ok := splitIn(filter)
	if !ok {
		return nil, false
	}
	f := &splitFind{requestID: int32(binary.LittleEndian.Uint32(req[4:8])), body: body, in: in, dedupe: in.field != "_id"}
	if f.dedupe && projection != nil {
		if id, err := projection.LookupErr("_id"); err == nil && !included(id) {
			return nil, false // _id left out: documents could not be told apart
		}
	}
	return f, true
}

// included reports whether a projection's value includes its field.
func included(v bson.RawValue) bool {
	if b, ok := v.BooleanOK(); ok {
		return b
	}
	n, ok := v.AsInt64OK()
	return !ok || n != 0
}

// message returns the find for one value, in one batch of at most
// maxSplitBatch+1 documents (so that a longer result shows).
func (f *splitFind) message(v bson.RawValue) ([]byte, error) {
	filter, err := f.in.with(v)
	if err != nil {
		return nil, err
	}
	elems, _ := f.body.Elements()
	d := make(bson.D, 0, len(elems)+2)
	for _, e := range elems {
		if e.Key() == "filter" {
			d = append(d, bson.E{Key: "filter", Value: filter})
			continue
		}
		d = append(d, bson.E{Key: e.Key(), Value: e.Value()})
	}
	d = append(d, bson.E{Key: "batchSize", Value: int64(maxSplitBatch + 1)}, bson.E{Key: "singleBatch", Value: true})
	doc, err := bson.Marshal(d)
	if err != nil {
		return nil, err
	}
	n := headerLen + 4 + 1 + len(doc)
	msg := make([]byte, 0, n)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(n))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(f.requestID))
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = binary.LittleEndian.AppendUint32(msg, opMsg)
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = append(msg, 0)
	return append(msg, doc...), nil
}

// run sends one find per value and returns the answer to the whole find,
// or ok false when an answer was not the plain batch expected (an error, a
// cursor left open, too much): the caller then sends the find whole.
func (f *splitFind) run(up net.Conn, ur *bufio.Reader) (resp []byte, ok bool, err error) {
	var (
		docs []bson.Raw
		seen = map[string]bool{}
		size int
		ns   string
	)
	for _, v := range f.in.values {
		msg, err := f.message(v)
		if err != nil {
			return nil, false, nil
		}
		if _, err := up.Write(msg); err != nil {
			return nil, false, err
		}
		r, err := readMessage(ur)
		if err != nil {
			return nil, false, err
		}
		body, good := msgBody(r)
		if !good {
			return nil, false, nil
		}
		if okv, _ := body.Lookup("ok").AsInt32OK(); okv != 1 {
			return nil, false, nil
		}
		cur, good := body.Lookup("cursor").DocumentOK()
		if !good {
			return nil, false, nil
		}
		if id, _ := cur.Lookup("id").AsInt64OK(); id != 0 {
			return nil, false, nil
		}
		ns, _ = cur.Lookup("ns").StringValueOK()
		batch, good := cur.Lookup("firstBatch").ArrayOK()
		if !good {
			return nil, false, nil
		}
		vals, err := batch.Values()
		if err != nil || len(vals) > maxSplitBatch {
			return nil, false, nil
		}
		for _, dv := range vals {
			d, good := dv.DocumentOK()
			if !good {
				return nil, false, nil
			}
			if f.dedupe {
				id, err := d.LookupErr("_id")
				if err != nil {
					return nil, false, nil
				}
				key := string(rune(id.Type)) + string(id.Value)
				if seen[key] {
					continue
				}
				seen[key] = true
			}
			if size += len(d); size > maxSplitAnswer {
				return nil, false, nil
			}
			docs = append(docs, d)
		}
	}
	all := make(bson.A, len(docs))
	for i, d := range docs {
		all[i] = d
	}
	doc, err := bson.Marshal(bson.D{
		{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: all}, {Key: "id", Value: int64(0)}, {Key: "ns", Value: ns}}},
		{Key: "ok", Value: 1.0},
	})
	if err != nil {
		return nil, false, nil
	}
	return replyMsg(f.requestID, doc), true, nil
}

// splitStatement returns the statements stmt stands for: one per value of
// an _id $in when it updates many documents and is not an upsert,
// otherwise stmt alone.
func splitStatement(stmt bson.Raw) []bson.Raw {
	elems, err := stmt.Elements()
	if err != nil {
		return []bson.Raw{stmt}
	}
	var q bson.Raw
	multi := false
	for _, e := range elems {
		switch e.Key() {
		case "q":
			q, _ = e.Value().DocumentOK()
		case "multi":
			multi = e.Value().Boolean()
		case "u":
		case "upsert":
			if e.Value().Boolean() {
				return []bson.Raw{stmt}
			}
		default: // arrayFilters, hint, collation...
			return []bson.Raw{stmt}
		}
	}
	if q == nil || !multi {
		return []bson.Raw{stmt}
	}
	in, ok := splitIn(q)
	if !ok || in.field != "_id" {
		return []bson.Raw{stmt}
	}
	out := make([]bson.Raw, 0, len(in.values))
	for _, v := range in.values {
		one, err := in.with(v)
		if err != nil {
			return []bson.Raw{stmt}
		}
		d := make(bson.D, 0, len(elems))
		for _, e := range elems {
			if e.Key() == "q" {
				d = append(d, bson.E{Key: "q", Value: one})
				continue
			}
			d = append(d, bson.E{Key: e.Key(), Value: e.Value()})
		}
		b, err := bson.Marshal(d)
		if err != nil {
			return []bson.Raw{stmt}
		}
		out = append(out, b)
	}
	return out
}
