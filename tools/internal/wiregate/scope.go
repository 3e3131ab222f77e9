package wiregate

import (
	"bytes"
	"encoding/binary"
	"sync"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/bsontype"
)

// FerretDB loses updates only within one document (it reads, changes and
// writes back each document on its own), so writes to different documents
// need not wait for each other. An update, delete or findAndModify that
// names one document by _id (every statement's filter) locks that
// document; any other update or delete (a filter on other fields, many
// ids) locks the whole collection, which excludes the document locks of
// that collection. Everything else runs alone, as before: inserts, upserts
// and DDL take FerretDB's PostgreSQL registry lock exclusively
// (CollectionCreate on every insert; a new collection's CREATE TABLE), and
// with them running beside other writes the benchmark's burst and seeding
// timed out at the test database; so do dropDatabase and unknown commands.

// scope is what a write locks: a document (id set), a collection (id
// empty), or everything (coll empty).
type scope struct {
	coll string // "db.collection"
	id   string // the _id's BSON type and value
}

// writeScope returns the scope of the write command name in req.
func writeScope(name string, req []byte) scope {
	body, seqs, ok := msgSections(req)
	if !ok {
		return scope{}
	}
	db, _ := body.Lookup("$db").StringValueOK()
	coll, ok := body.Lookup(name).StringValueOK()
	if !ok || db == "" || coll == "" {
		return scope{}
	}
	s := scope{coll: db + "." + coll}
	var ids []bson.RawValue
	switch name {
	case "update", "delete":
		field := map[string]string{"update": "updates", "delete": "deletes"}[name]
		for _, stmt := range statements(body, seqs, field) {
			if upsert, _ := stmt.Lookup("upsert").BooleanOK(); upsert {
				return scope{}
			}
			ids = append(ids, filterID(stmt.Lookup("q")))
		}
	case "findAndModify", "findandmodify":
		if upsert, _ := body.Lookup("upsert").BooleanOK(); upsert {
			return scope{}
		}
		ids = append(ids, filterID(body.Lookup("query")))
	default:
		return scope{}
	}
	s.id = oneID(ids)
	return s
}

// statements returns the documents of a command's array field, from its
// body or from a document sequence section.
func statements(body bson.Raw, seqs map[string][]bson.Raw, field string) []bson.Raw {
	if docs, ok := seqs[field]; ok {
		return docs
	}
	arr, ok := body.Lookup(field).ArrayOK()
	if !ok {
		return nil
	}
	vals, err := arr.Values()
	if err != nil {
		return nil
	}
	out := make([]bson.Raw, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return nil
		}
		out = append(out, d)
	}
	return out
}

// filterID returns the value of a filter's top-level _id when it is an
// equality with a plain value (not an operator, array or regex).
func filterID(filter bson.RawValue) bson.RawValue {
	d, ok := filter.DocumentOK()
	if !ok {
		return bson.RawValue{}
	}
	return d.Lookup("_id")
}

// oneID returns the key of the one _id all of ids name, or "" when they
// are none, several, or one that is not a plain value.
func oneID(ids []bson.RawValue) string {
	if len(ids) == 0 {
		return ""
	}
	for _, v := range ids {
		switch v.Type {
		case bsontype.String, bsontype.ObjectID, bsontype.Int32, bsontype.Int64, bsontype.Double, bsontype.Boolean, bsontype.DateTime:
		default:
			return ""
		}
		if v.Type != ids[0].Type || !bytes.Equal(v.Value, ids[0].Value) {
			return ""
		}
	}
	return string(append([]byte{byte(ids[0].Type)}, ids[0].Value...))
}

// msgSections returns an OP_MSG's body and its document sequences by
// identifier; false for anything it does not fully understand.
func msgSections(req []byte) (bson.Raw, map[string][]bson.Raw, bool) {
	if opCode(req) != opMsg || len(req) < headerLen+5 {
		return nil, nil, false
	}
	end := len(req)
	if binary.LittleEndian.Uint32(req[16:20])&flagChecksumPresent != 0 {
		end -= 4
	}
	var body bson.Raw
	seqs := map[string][]bson.Raw{}
	for p := headerLen + 4; p < end; {
		kind := req[p]
		p++
		if p+4 > end {
			return nil, nil, false
		}
		size := int(int32(binary.LittleEndian.Uint32(req[p : p+4])))
		if size < 5 || p+size > end {
			return nil, nil, false
		}
		sec := req[p : p+size]
		p += size
		switch kind {
		case 0:
			body = bson.Raw(sec)
		case 1:
			i := bytes.IndexByte(sec[4:], 0)
			if i < 0 {
				return nil, nil, false
			}
			docs, ok := splitDocs(sec[4+i+1:])
			if !ok {
				return nil, nil, false
			}
			seqs[string(sec[4:4+i])] = docs
		default:
			return nil, nil, false
		}
	}
	if body == nil || body.Validate() != nil {
		return nil, nil, false
	}
	return body, seqs, true
}

func splitDocs(b []byte) ([]bson.Raw, bool) {
	var out []bson.Raw
	for len(b) > 0 {
		if len(b) < 5 {
			return nil, false
		}
		n := int(int32(binary.LittleEndian.Uint32(b[:4])))
		if n < 5 || n > len(b) {
			return nil, false
		}
		out = append(out, bson.Raw(b[:n]))
		b = b[n:]
	}
	return out, true
}

// locks are the gate's write locks: all > collection > document, always
// taken in that order. sync.RWMutex stops new readers while a writer
// waits, so a collection-wide write is not starved by document writes.
type locks struct {
	all   sync.RWMutex
	mu    sync.Mutex
	colls map[string]*collLock
}

type collLock struct {
	rw   sync.RWMutex
	docs map[string]*docLock
}

type docLock struct {
	sync.Mutex
	users int // waiting or holding: the entry goes when none is left
}

// acquire takes s's locks and returns their release.
func (l *locks) acquire(s scope) (release func()) {
	if s.coll == "" {
		l.all.Lock()
		return l.all.Unlock
	}
	l.all.RLock()
	l.mu.Lock()
	if l.colls == nil {
		l.colls = map[string]*collLock{}
	}
	c := l.colls[s.coll]
	if c == nil {
		c = &collLock{docs: map[string]*docLock{}}
		l.colls[s.coll] = c
	}
	if s.id == "" {
		l.mu.Unlock()
		c.rw.Lock()
		return func() { c.rw.Unlock(); l.all.RUnlock() }
	}
	d := c.docs[s.id]
	if d == nil {
		d = &docLock{}
		c.docs[s.id] = d
	}
	d.users++
	l.mu.Unlock()
	c.rw.RLock()
	d.Lock()
	return func() {
		d.Unlock()
		l.mu.Lock()
		if d.users--; d.users == 0 {
			delete(c.docs, s.id)
		}
		l.mu.Unlock()
		c.rw.RUnlock()
		l.all.RUnlock()
	}
}
