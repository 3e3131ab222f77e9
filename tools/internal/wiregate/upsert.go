package wiregate

import (
	"bufio"
	"net"

	"go.mongodb.org/mongo-driver/bson"
)

// An upsert runs alone (scope.go: its insert takes FerretDB's registry
// lock), every other write of every client waiting for it. Most upserts
// by _id find their document, and then insert nothing: so the gate first
// sends such an upsert as a plain update, under that document's lock
// only, and answers with it when it matched (MongoDB's answer to an upsert
// that matched is the same). Only when it matched nothing does the upsert
// run, alone. Another client inserting the document in between is what
// MongoDB allows too: the upsert then updates it.

// upsertByIDAsUpdate answers a one-statement update command upserting one
// _id when the document is there; done is false when the gate must send
// the upsert itself.
func (g *Gate) upsertByIDAsUpdate(req []byte, up net.Conn, ur *bufio.Reader) (resp []byte, done bool, err error) {
	u, ok := parseUpdate(req)
	if !ok || len(u.stmts) != 1 {
		return nil, false, nil
	}
	stmt := u.stmts[0]
	if upsert, _ := stmt.Lookup("upsert").BooleanOK(); !upsert {
		return nil, false, nil
	}
	id := oneID([]bson.RawValue{filterID(stmt.Lookup("q"))})
	coll, _ := bson.Raw(u.body).Lookup("update").StringValueOK()
	db, _ := bson.Raw(u.body).Lookup("$db").StringValueOK()
	plain, ok := filterDoc(stmt, map[string]bool{"upsert": true})
	if id == "" || coll == "" || db == "" || !ok {
		return nil, false, nil
	}
	defer g.locks.acquire(scope{coll: db + "." + coll, id: id})()
	defer g.slot()()
	if _, err := up.Write(u.message(plain)); err != nil {
		return nil, false, err
	}
	if resp, err = readMessage(ur); err != nil {
		return nil, false, err
	}
	if n, _ := updateMatched(resp); n == 0 {
		return nil, false, nil
	}
	return asMongoDBError(resp), true, nil
}

// updateMatched returns n of an update's answer without write errors.
func updateMatched(resp []byte) (int32, bool) {
	body, ok := msgBody(resp)
	if !ok || !answeredOK(resp) {
		return 0, false
	}
	n, ok := body.Lookup("n").AsInt32OK()
	return n, ok
}
