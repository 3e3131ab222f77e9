package wiregate

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/bson"
)

// command is what the gate reads of a request: its name and class, and the
// session fields a driver adds on a replica set.
type command struct {
	name       string
	write      bool
	moreToCome bool
	requestID  int32
	body       bson.Raw // nil when the request is not an OP_MSG the gate can read
	seqs       map[string][]bson.Raw
	db, coll   string
	lsid       string // the session id's BSON type and value; "" without one
	txnNumber  int64
	hasTxn     bool // txnNumber is present
	inTxn      bool // autocommit: false, a command of a transaction
	start      bool // startTransaction: true, its first command
}

func parseCommand(req []byte) command {
	name, write, more := classify(req)
	c := command{name: name, write: write, moreToCome: more}
	if len(req) >= headerLen {
		c.requestID = int32(binary.LittleEndian.Uint32(req[4:8]))
	}
	body, seqs, ok := msgSections(req)
	if !ok {
		return c
	}
	c.body, c.seqs = body, seqs
	c.db, _ = body.Lookup("$db").StringValueOK()
	c.coll, _ = body.Lookup(name).StringValueOK()
	if id, err := body.LookupErr("lsid", "id"); err == nil {
		c.lsid = string(append([]byte{byte(id.Type)}, id.Value...))
	}
	if v, err := body.LookupErr("txnNumber"); err == nil {
		c.txnNumber, c.hasTxn = v.AsInt64OK()
	}
	if v, err := body.LookupErr("autocommit"); err == nil {
		if b, ok := v.BooleanOK(); ok && !b {
			c.inTxn = true
		}
	}
	if v, err := body.LookupErr("startTransaction"); err == nil {
		c.start, _ = v.BooleanOK()
	}
	return c
}

// sessionFields are the fields of a replica set's session protocol that
// FerretDB v1 refuses on some commands ("unknown field") and ignores on
// others; the gate answers for them itself and never forwards them.
var sessionFields = map[string]bool{"txnNumber": true, "autocommit": true, "startTransaction": true}

// transactionFields are dropped too from a transaction's commands: its
// read concern is the gate's (the transaction sees its own writes and no
// one else's), and FerretDB refuses it on most commands.
var transactionFields = map[string]bool{
	"txnNumber": true, "autocommit": true, "startTransaction": true, "readConcern": true, "writeConcern": true,
}

// withoutFields returns the OP_MSG req with the body's fields in drop
// removed (and no checksum, which would no longer match); anything else
// comes back unchanged.
func withoutFields(req []byte, drop map[string]bool) []byte {
	if opCode(req) != opMsg || len(req) < headerLen+5 {
		return req
	}
	flags := binary.LittleEndian.Uint32(req[16:20])
	end := len(req)
	if flags&flagChecksumPresent != 0 {
		end -= 4
	}
	out := make([]byte, 0, len(req))
	out = append(out, req[:headerLen]...)
	out = binary.LittleEndian.AppendUint32(out, flags&^flagChecksumPresent)
	for p := headerLen + 4; p < end; {
		kind := req[p]
		if p+5 > end {
			return req
		}
		size := int(int32(binary.LittleEndian.Uint32(req[p+1 : p+5])))
		if size < 5 || p+1+size > end {
			return req
		}
		sec := req[p+1 : p+1+size]
		if kind == 0 {
			var ok bool
			if sec, ok = filterDoc(sec, drop); !ok {
				return req
			}
		}
		out = append(out, kind)
		out = append(out, sec...)
		p += 1 + size
	}
	binary.LittleEndian.PutUint32(out[0:4], uint32(len(out)))
	return out
}

// filterDoc returns doc without the fields in drop.
func filterDoc(doc []byte, drop map[string]bool) ([]byte, bool) {
	elems, err := bson.Raw(doc).Elements()
	if err != nil {
		return nil, false
	}
	out := []byte{0, 0, 0, 0}
	for _, e := range elems {
		if !drop[e.Key()] {
			out = append(out, e...)
		}
	}
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out, true
}

// MongoDB's error codes the gate answers with.
const (
	codeNoSuchTransaction       = 251
	codeTransactionTooOld       = 225
	codeTransactionCommitted    = 256
	codeNotSupportedInTxn       = 263
	codeInvalidOptions          = 72
	codeInternalError           = 1
	labelTransientTransactionEr = "TransientTransactionError"
)

var codeNames = map[int32]string{
	codeNoSuchTransaction:    "NoSuchTransaction",
	codeTransactionTooOld:    "TransactionTooOld",
	codeTransactionCommitted: "TransactionCommitted",
	codeNotSupportedInTxn:    "OperationNotSupportedInTransaction",
	codeInvalidOptions:       "InvalidOptions",
	codeInternalError:        "InternalError",
}

// errorReply is MongoDB's answer to requestID failing with code.
func errorReply(requestID, code int32, msg string, labels ...string) []byte {
	d := bson.D{
		{Key: "ok", Value: 0.0},
		{Key: "errmsg", Value: msg},
		{Key: "code", Value: code},
		{Key: "codeName", Value: codeNames[code]},
	}
	if len(labels) > 0 {
		d = append(d, bson.E{Key: "errorLabels", Value: labels})
	}
	doc, _ := bson.Marshal(d)
	return replyMsg(requestID, doc)
}

// okReply is {ok: 1} answering requestID.
func okReply(requestID int32) []byte {
	doc, _ := bson.Marshal(bson.D{{Key: "ok", Value: 1.0}})
	return replyMsg(requestID, doc)
}

// answeredOK reports whether resp is an OP_MSG answer with ok: 1 and no
// write errors: the command did all it was asked.
func answeredOK(resp []byte) bool {
	body, ok := msgBody(resp)
	if !ok {
		return false
	}
	if v, ok := body.Lookup("ok").AsInt32OK(); !ok || v != 1 {
		return false
	}
	if arr, ok := body.Lookup("writeErrors").ArrayOK(); ok {
		if vals, _ := arr.Values(); len(vals) > 0 {
			return false
		}
	}
	_, wce := body.LookupErr("writeConcernError")
	return wce != nil
}

// asAnswerTo returns a copy of the answer resp addressed to requestID.
func asAnswerTo(resp []byte, requestID int32) []byte {
	out := append([]byte(nil), resp...)
	binary.LittleEndian.PutUint32(out[4:8], uint32(replyID.Add(1)))
	binary.LittleEndian.PutUint32(out[8:12], uint32(requestID))
	return out
}

// upstream is a connection to FerretDB and its reader.
type upstream struct {
	conn net.Conn
	r    *bufio.Reader
}

// ownRequestID numbers the commands the gate sends FerretDB itself, in a
// range no driver reaches (drivers count up from 1).
var ownRequestID atomic.Int32

// run sends FerretDB the command doc and returns its answer's body; a
// command that fails is an error.
func (u upstream) run(doc bson.D) (bson.Raw, error) {
	b, err := bson.Marshal(doc)
	if err != nil {
		return nil, err
	}
	id := 0x7f00_0000 | ownRequestID.Add(1)&0x00ff_ffff
	msg := binary.LittleEndian.AppendUint32(nil, uint32(headerLen+5+len(b)))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(id))
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = binary.LittleEndian.AppendUint32(msg, opMsg)
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = append(msg, 0)
	msg = append(msg, b...)
	if _, err := u.conn.Write(msg); err != nil {
		return nil, err
	}
	for {
		resp, err := readMessage(u.r)
		if err != nil {
			return nil, err
		}
		if responseTo(resp) != id {
			continue
		}
		body, ok := msgBody(resp)
		if !ok {
			return nil, errors.New("an answer that is not a one-section OP_MSG")
		}
		if v, ok := body.Lookup("ok").AsInt32OK(); !ok || v != 1 {
			msg, _ := body.Lookup("errmsg").StringValueOK()
			return nil, fmt.Errorf("%s: %s", doc[0].Key, msg)
		}
		if arr, ok := body.Lookup("writeErrors").ArrayOK(); ok {
			if vals, _ := arr.Values(); len(vals) > 0 {
				return nil, fmt.Errorf("%s: %v", doc[0].Key, arr)
			}
		}
		return body, nil
	}
}

// findAll returns every document of db.coll that filter matches.
func (u upstream) findAll(db, coll string, filter bson.RawValue) ([]bson.Raw, error) {
	if filter.Type == 0 {
		filter = bson.RawValue{Type: bson.TypeEmbeddedDocument, Value: []byte{5, 0, 0, 0, 0}}
	}
	body, err := u.run(bson.D{{Key: "find", Value: coll}, {Key: "filter", Value: filter}, {Key: "$db", Value: db}})
	if err != nil {
		return nil, err
	}
	var out []bson.Raw
	batch := "firstBatch"
	for {
		arr, _ := body.Lookup("cursor", batch).ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			if d, ok := v.DocumentOK(); ok {
				out = append(out, d)
			}
		}
		id, _ := body.Lookup("cursor", "id").AsInt64OK()
		if id == 0 {
			return out, nil
		}
		batch = "nextBatch"
		if body, err = u.run(bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: coll}, {Key: "$db", Value: db}}); err != nil {
			return nil, err
		}
	}
}
