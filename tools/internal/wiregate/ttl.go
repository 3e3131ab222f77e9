package wiregate

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"go.mongodb.org/mongo-driver/bson"
)

// TTL indexes. FerretDB v1 refuses the index option expireAfterSeconds
// (NotImplemented), so the gate keeps MongoDB's contract itself:
//
//   - createIndexes (indexes.go): an index with expireAfterSeconds goes to FerretDB
//     without it (FerretDB builds a plain index), and the gate remembers
//     the TTL in a collection of its own, ttlDatabase.ttlCollection, so it
//     outlives a restart of the gate.
//   - listIndexes shows expireAfterSeconds back on those indexes.
//   - dropIndexes, drop and dropDatabase forget the TTLs they remove.
//   - A monitor (every TTLInterval, 60 s as MongoDB's) deletes the
//     documents whose indexed date is older than expireAfterSeconds,
//     through the gate's write path, so its deletes wait for a transaction
//     under way as any other write.
//
// Differences from MongoDB: collMod cannot change a TTL, and renaming a
// collection leaves its TTL behind (the services do neither).

// DefaultTTLInterval is how often MongoDB's TTL monitor runs.
const DefaultTTLInterval = 60 * time.Second

// Where the gate keeps its TTL indexes.
const (
	ttlDatabase   = "doclib_gate"
	ttlCollection = "ttl_indexes"
)

const codeCannotCreateIndex = 67

func init() { codeNames[codeCannotCreateIndex] = "CannotCreateIndex" }

// ttlIndex is a TTL index as the gate keeps it.
type ttlIndex struct {
	ID      string `bson:"_id"`
	DB      string `bson:"db"`
	Coll    string `bson:"coll"`
	Name    string `bson:"name"`
	Field   string `bson:"field"`
	Seconds int32  `bson:"seconds"`
}

// ttlCommands are the commands the gate looks at for TTL indexes.
var ttlCommands = map[string]bool{
	"createIndexes": true, "listIndexes": true, "dropIndexes": true, "deleteIndexes": true,
	"drop": true, "dropDatabase": true,
}

// ttl answers a command of ttlCommands outside a transaction.
func (g *Gate) ttl(cc *clientConn, c command, req []byte, u upstream) error {
	if c.name == "createIndexes" {
		return g.createIndexes(cc, c, req, u)
	}
	if c.name == "listIndexes" {
		return g.listIndexes(cc, c, req, u)
	}
	var rec bytes.Buffer
	if err := g.exchange(withoutFields(req, sessionFields), u.conn, u.r, &rec); err != nil {
		return err
	}
	if answeredOK(rec.Bytes()) {
		if err := g.forgetTTL(c, u); err != nil {
			g.log().Error("gate: a dropped TTL index could not be forgotten", "error", err)
		}
	}
	return cc.reply(rec.Bytes())
}

// ttlSpecs returns the index specifications requested of c's collection
// without expireAfterSeconds, and the TTL indexes among them.
func ttlSpecs(c command, requested []bson.Raw) (bson.A, []ttlIndex, error) {
	specs := bson.A{}
	var ttls []ttlIndex
	for _, spec := range requested {
		exp, err := spec.LookupErr("expireAfterSeconds")
		if err != nil {
			specs = append(specs, spec)
			continue
		}
		t, err := ttlOf(c, spec, exp)
		if err != nil {
			return nil, nil, err
		}
		plain, _ := filterDoc(spec, map[string]bool{"expireAfterSeconds": true})
		specs = append(specs, bson.Raw(plain))
		ttls = append(ttls, t)
	}
	return specs, ttls, nil
}

// ttlOf checks a TTL index's specification as MongoDB does.
func ttlOf(c command, spec bson.Raw, exp bson.RawValue) (ttlIndex, error) {
	name, _ := spec.Lookup("name").StringValueOK()
	keys, _ := spec.Lookup("key").DocumentOK()
	elems, _ := keys.Elements()
	if len(elems) != 1 {
		return ttlIndex{}, fmt.Errorf("TTL index %q: TTL indexes are single-field indexes, compound indexes do not support TTL", name)
	}
	field := elems[0].Key()
	if field == "_id" {
		return ttlIndex{}, fmt.Errorf("TTL index %q: the field for a TTL index cannot be _id", name)
	}
	var secs float64
	switch exp.Type {
	case bson.TypeInt32, bson.TypeInt64:
		n, _ := exp.AsInt64OK()
		secs = float64(n)
	case bson.TypeDouble:
		secs = exp.Double()
	default:
		return ttlIndex{}, fmt.Errorf("TTL index %q: expireAfterSeconds must be a number", name)
	}
	if secs < 0 || secs > math.MaxInt32 || math.IsNaN(secs) {
		return ttlIndex{}, fmt.Errorf("TTL index %q: expireAfterSeconds must be within [0, %d]", name, math.MaxInt32)
	}
	return ttlIndex{ID: c.db + "." + c.coll + "/" + name, DB: c.db, Coll: c.coll, Name: name,
		Field: field, Seconds: int32(secs)}, nil
}

// rememberTTL keeps ttls in the gate's collection; the caller holds the
// write side alone (as DDL).
func (g *Gate) rememberTTL(u upstream, ttls []ttlIndex) error {
	for _, t := range ttls {
		_, err := u.run(bson.D{{Key: "update", Value: ttlCollection},
			{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: t.ID}}},
				{Key: "u", Value: t}, {Key: "upsert", Value: true}}}},
			{Key: "$db", Value: ttlDatabase}})
		if err != nil {
			return err
		}
	}
	return nil
}

// forgetTTL forgets the TTL indexes a successful drop, dropDatabase or
// dropIndexes c removed: those of its database, collection, or those of
// its collection FerretDB no longer lists.
func (g *Gate) forgetTTL(c command, u upstream) error {
	q := bson.D{{Key: "db", Value: c.db}}
	switch c.name {
	case "drop":
		q = append(q, bson.E{Key: "coll", Value: c.coll})
	case "dropIndexes", "deleteIndexes":
		names, err := u.indexNames(c.db, c.coll)
		if err != nil {
			return err
		}
		q = append(q, bson.E{Key: "coll", Value: c.coll}, bson.E{Key: "name", Value: bson.D{{Key: "$nin", Value: names}}})
	}
	defer g.holdAll()()
	_, err := u.run(bson.D{{Key: "delete", Value: ttlCollection},
		{Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: q}, {Key: "limit", Value: 0}}}},
		{Key: "$db", Value: ttlDatabase}})
	return err
}

// indexNames returns the names of db.coll's indexes (none if it is gone).
func (u upstream) indexNames(db, coll string) (bson.A, error) {
	body, err := u.run(bson.D{{Key: "listIndexes", Value: coll}, {Key: "$db", Value: db}})
	if err != nil {
		return bson.A{}, nil // NamespaceNotFound: no index left
	}
	names := bson.A{}
	arr, _ := body.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := arr.Values()
	for _, v := range vals {
		if d, ok := v.DocumentOK(); ok {
			names = append(names, d.Lookup("name").StringValue())
		}
	}
	return names, nil
}

// ttlsOf returns the TTL indexes the gate keeps for db.coll ("" for all),
// by name.
func (u upstream) ttlsOf(db, coll string) (map[string]ttlIndex, error) {
	var filter bson.RawValue
	if db != "" {
		b, _ := bson.Marshal(bson.D{{Key: "db", Value: db}, {Key: "coll", Value: coll}})
		filter = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: b}
	}
	docs, err := u.findAll(ttlDatabase, ttlCollection, filter)
	if err != nil {
		return nil, err
	}
	out := map[string]ttlIndex{}
	for _, d := range docs {
		var t ttlIndex
		if err := bson.Unmarshal(d, &t); err != nil {
			return nil, err
		}
		out[t.ID] = t
	}
	return out, nil
}

// listIndexes answers c, with expireAfterSeconds on the TTL indexes.
func (g *Gate) listIndexes(cc *clientConn, c command, req []byte, u upstream) error {
	req = withoutFields(req, sessionFields)
	ttls, err := u.ttlsOf(c.db, c.coll)
	if err != nil || len(ttls) == 0 {
		return g.exchange(req, u.conn, u.r, cc.w)
	}
	var rec bytes.Buffer
	if err := g.exchange(req, u.conn, u.r, &rec); err != nil {
		return err
	}
	return cc.reply(withTTLs(rec.Bytes(), ttls))
}

// withTTLs returns the listIndexes answer resp with expireAfterSeconds
// added to the indexes of ttls (by namespace and name).
func withTTLs(resp []byte, ttls map[string]ttlIndex) []byte {
	body, ok := msgBody(resp)
	if !ok || !answeredOK(resp) {
		return resp
	}
	var doc bson.D
	if err := bson.Unmarshal(body, &doc); err != nil {
		return resp
	}
	for i, e := range doc {
		cur, ok := e.Value.(bson.D)
		if e.Key != "cursor" || !ok {
			continue
		}
		ns := ""
		for _, ce := range cur {
			if ce.Key == "ns" {
				ns, _ = ce.Value.(string)
			}
		}
		for _, ce := range cur {
			if batch, ok := ce.Value.(bson.A); ok && ce.Key == "firstBatch" {
				addTTLs(batch, ns, ttls)
			}
		}
		doc[i].Value = cur
	}
	b, err := bson.Marshal(doc)
	if err != nil {
		return resp
	}
	return asAnswerTo(replyMsg(0, b), responseTo(resp))
}

func addTTLs(batch bson.A, ns string, ttls map[string]ttlIndex) {
	for j, v := range batch {
		spec, ok := v.(bson.D)
		if !ok {
			continue
		}
		for _, se := range spec {
			if name, _ := se.Value.(string); se.Key == "name" {
				if t, ok := ttls[ns+"/"+name]; ok {
					batch[j] = append(spec, bson.E{Key: "expireAfterSeconds", Value: t.Seconds})
				}
			}
		}
	}
}

// holdAll takes the write side alone (as DDL does) and a slot; it
// returns their release.
func (g *Gate) holdAll() (release func()) {
	if g.Off {
		return func() {}
	}
	unlock := g.locks.acquire(scope{})
	free := g.slot()
	return func() { free(); unlock() }
}

func mustElements(d bson.Raw) []bson.RawElement {
	elems, _ := d.Elements()
	return elems
}

// commandMsg is an OP_MSG request numbered id whose body is doc.
func commandMsg(id int32, doc any) ([]byte, error) {
	b, err := bson.Marshal(doc)
	if err != nil {
		return nil, err
	}
	msg := replyMsg(0, b)
	copyID(msg, id)
	return msg, nil
}

func copyID(msg []byte, id int32) {
	msg[4], msg[5], msg[6], msg[7] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
	msg[8], msg[9], msg[10], msg[11] = 0, 0, 0, 0
}

func (g *Gate) ttlInterval() time.Duration {
	if g.TTLInterval > 0 {
		return g.TTLInterval
	}
	return DefaultTTLInterval
}

// ttlMonitor removes expired documents every TTLInterval until ctx ends.
func (g *Gate) ttlMonitor(ctx context.Context) {
	tick := time.NewTicker(g.ttlInterval())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := g.expireTTL(ctx); err != nil && ctx.Err() == nil {
			g.log().Warn("gate: TTL monitor", "error", err)
		}
	}
}

// expireTTL deletes, for each TTL index, the documents whose indexed date
// is older than its expireAfterSeconds, as writes through the gate.
func (g *Gate) expireTTL(ctx context.Context) error {
	conn, err := g.Dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	u := upstream{conn: conn, r: bufio.NewReader(conn)}
	ttls, err := u.ttlsOf("", "")
	if err != nil {
		return err
	}
	for _, t := range ttls {
		cutoff := time.Now().Add(-time.Duration(t.Seconds) * time.Second)
		msg, err := commandMsg(0x7e00_0000|ownRequestID.Add(1)&0x00ff_ffff, bson.D{
			{Key: "delete", Value: t.Coll},
			{Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: t.Field, Value: bson.D{{Key: "$lt", Value: cutoff}}}}}, {Key: "limit", Value: 0}}}},
			{Key: "$db", Value: t.DB}})
		if err != nil {
			return err
		}
		var rec bytes.Buffer
		if err := g.forward(msg, conn, u.r, &rec, true); err != nil {
			return err
		}
		if !answeredOK(rec.Bytes()) {
			body, _ := msgBody(rec.Bytes())
			return fmt.Errorf("expiring %s.%s: %s", t.DB, t.Coll, body)
		}
	}
	return nil
}
