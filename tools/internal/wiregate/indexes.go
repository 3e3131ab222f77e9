package wiregate

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
)

// createIndexes answers as MongoDB does. FerretDB v1 panics on a
// createIndexes naming an index that exists already; MongoDB skips an
// index identical to an existing one (all of them: ok, "all indexes
// already exist"), and refuses one that has an existing index's name but
// another key (IndexKeySpecsConflict) or other options, or an existing
// index's key and options under another name (IndexOptionsConflict). So
// the gate lists the collection's indexes, answers a conflict itself, and
// forwards only the new indexes, without expireAfterSeconds (ttl.go). It
// lists, creates and remembers the TTLs alone, as one DDL step, so two
// services creating the same indexes at once never both create them.
func (g *Gate) createIndexes(cc *clientConn, c command, req []byte, u upstream) error {
	requested, ok := requestedIndexes(c)
	if !ok {
		return g.exchange(withoutFields(req, sessionFields), u.conn, u.r, cc.w) // FerretDB answers for it
	}
	resp, err := g.createIndexesAlone(c, requested, u)
	if err != nil {
		return err
	}
	return cc.reply(resp)
}

func (g *Gate) createIndexesAlone(c command, requested []bson.Raw, u upstream) ([]byte, error) {
	if !g.Off {
		defer g.locks.acquire(scope{})()
	}
	have, err := u.indexes(c.db, c.coll)
	if err != nil {
		return errorReply(c.requestID, codeInternalError, "gate: listing the indexes: "+err.Error()), nil
	}
	todo, conflict := newIndexes(c.requestID, requested, have)
	if conflict != nil {
		return conflict, nil
	}
	if len(todo) == 0 {
		doc, _ := bson.Marshal(bson.D{{Key: "numIndexesBefore", Value: int32(len(have))},
			{Key: "numIndexesAfter", Value: int32(len(have))}, {Key: "note", Value: "all indexes already exist"},
			{Key: "ok", Value: 1.0}})
		return replyMsg(c.requestID, doc), nil
	}
	specs, ttls, err := ttlSpecs(c, todo)
	if err != nil {
		return errorReply(c.requestID, codeCannotCreateIndex, err.Error()), nil
	}
	body := bson.D{}
	for _, e := range mustElements(c.body) {
		switch {
		case sessionFields[e.Key()]:
		case e.Key() == "indexes":
			body = append(body, bson.E{Key: "indexes", Value: specs})
		default:
			body = append(body, bson.E{Key: e.Key(), Value: e.Value()})
		}
	}
	msg, err := commandMsg(c.requestID, body)
	if err != nil {
		return nil, err
	}
	var rec bytes.Buffer
	if err := g.forward(msg, u.conn, u.r, &rec, false); err != nil {
		return nil, err
	}
	if len(ttls) > 0 && answeredOK(rec.Bytes()) {
		if err := g.rememberTTL(u, ttls); err != nil {
			return errorReply(c.requestID, codeInternalError, "gate: remembering the TTL index: "+err.Error()), nil
		}
	}
	return rec.Bytes(), nil
}

// requestedIndexes returns c's index specifications, when each is a
// document with a name.
func requestedIndexes(c command) ([]bson.Raw, bool) {
	arr, ok := c.body.Lookup("indexes").ArrayOK()
	if !ok {
		return nil, false
	}
	vals, _ := arr.Values()
	out := make([]bson.Raw, 0, len(vals))
	for _, v := range vals {
		spec, ok := v.DocumentOK()
		if _, named := spec.Lookup("name").StringValueOK(); !ok || !named {
			return nil, false
		}
		out = append(out, spec)
	}
	return out, len(out) > 0
}

// MongoDB's index conflicts.
const (
	codeIndexOptionsConflict  = 85
	codeIndexKeySpecsConflict = 86
)

func init() {
	codeNames[codeIndexOptionsConflict] = "IndexOptionsConflict"
	codeNames[codeIndexKeySpecsConflict] = "IndexKeySpecsConflict"
}

// newIndexes returns the requested indexes that do not exist yet, or
// MongoDB's answer to a conflict with one that does.
func newIndexes(requestID int32, requested []bson.Raw, have []bson.Raw) ([]bson.Raw, []byte) {
	var todo []bson.Raw
	for _, r := range requested {
		name, rs := r.Lookup("name").StringValue(), shapeOf(r)
		exists := false
		for _, h := range have {
			hs := shapeOf(h)
			same := h.Lookup("name").StringValue() == name
			switch {
			case same && hs.key != rs.key:
				return nil, errorReply(requestID, codeIndexKeySpecsConflict, fmt.Sprintf("An existing index has the same name as the "+
					"requested index. Requested index: %s, existing index: %s", r, h))
			case same && hs.options != rs.options:
				return nil, errorReply(requestID, codeIndexOptionsConflict, fmt.Sprintf("An equivalent index already exists with "+
					"the same name but different options. Requested index: %s, existing index: %s", r, h))
			case !same && hs == rs:
				return nil, errorReply(requestID, codeIndexOptionsConflict, "Index already exists with a different name: "+
					h.Lookup("name").StringValue())
			}
			exists = exists || same
		}
		if !exists {
			todo = append(todo, r)
		}
	}
	return todo, nil
}

// indexShape is what makes two index specifications the same index:
// their keys, and their options but name, version and those that change
// nothing (background; a boolean option false is its absence).
type indexShape struct{ key, options string }

func shapeOf(spec bson.Raw) indexShape {
	var s indexShape
	var opts []string
	for _, e := range mustElements(spec) {
		switch k := e.Key(); k {
		case "key":
			keys, _ := e.Value().DocumentOK()
			var parts []string
			for _, ke := range mustElements(keys) {
				parts = append(parts, ke.Key()+":"+canonical(ke.Value()))
			}
			s.key = strings.Join(parts, ",")
		case "name", "v", "ns", "background":
		default:
			if b, ok := e.Value().BooleanOK(); ok && !b {
				continue
			}
			opts = append(opts, k+":"+canonical(e.Value()))
		}
	}
	sort.Strings(opts)
	s.options = strings.Join(opts, ",")
	return s
}

// canonical writes v with every number as a double (1, 1.0 and
// NumberLong(1) are one key direction, one expireAfterSeconds).
func canonical(v bson.RawValue) string {
	if f, ok := v.DoubleOK(); ok {
		return fmt.Sprint(f)
	}
	if n, ok := v.AsInt64OK(); ok {
		return fmt.Sprint(float64(n))
	}
	return v.String()
}

// indexes returns the specifications of db.coll's indexes (none if the
// collection does not exist), with expireAfterSeconds on its TTL indexes.
func (u upstream) indexes(db, coll string) ([]bson.Raw, error) {
	body, err := u.run(bson.D{{Key: "listIndexes", Value: coll}, {Key: "$db", Value: db}})
	if err != nil {
		return nil, nil // NamespaceNotFound
	}
	ttls, err := u.ttlsOf(db, coll)
	if err != nil {
		return nil, err
	}
	arr, _ := body.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := arr.Values()
	out := make([]bson.Raw, 0, len(vals))
	for _, v := range vals {
		spec, ok := v.DocumentOK()
		if !ok {
			continue
		}
		if t, ok := ttls[db+"."+coll+"/"+spec.Lookup("name").StringValue()]; ok {
			var d bson.D
			if err := bson.Unmarshal(spec, &d); err != nil {
				return nil, err
			}
			if spec, err = bson.Marshal(append(d, bson.E{Key: "expireAfterSeconds", Value: t.Seconds})); err != nil {
				return nil, err
			}
		}
		out = append(out, spec)
	}
	return out, nil
}
