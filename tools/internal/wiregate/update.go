package wiregate

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/bson"
)

// FerretDB v1 runs the statements of one update command in a loop that
// keeps each statement's query open until the whole command ends
// (msg_update.go defers each iterator's Close inside the loop). A bulk
// write of more statements than its connection pool holds (the outbox
// relay's removals after a burst, anything a driver sends in one batch:
// MongoDB takes 100,000) then waits forever for a connection only it could
// free, and the gate, held by that write, stops every other write and
// every new connection's first command after it. FerretDB also answers
// such a command unlike MongoDB: it ignores ordered (the first failing
// statement ends the command), reports a failing statement as an error of
// the whole command without the counts of those done before it, and
// numbers upserts by their rank among upserts instead of the statement's
// index.
//
// So the gate sends an update command's statements one by one, under the
// lock it already holds, and answers the client as MongoDB does: the sums
// of n and nModified, upserted and writeErrors with the statement's index,
// stopping at the first error only when ordered.

// update is an update command taken apart: its body without the
// statements, and the statements.
type update struct {
	requestID int32
	body      []byte // the command's document without "updates"
	stmts     []bson.Raw
	ordered   bool
}

// parseUpdate takes an OP_MSG update command apart. It declines (false)
// what it does not fully understand, which then goes to FerretDB whole.
func parseUpdate(req []byte) (*update, bool) {
	if len(req) < headerLen+5 || binary.LittleEndian.Uint32(req[16:20])&flagChecksumPresent != 0 {
		return nil, false
	}
	u := &update{requestID: int32(binary.LittleEndian.Uint32(req[4:8])), ordered: true}
	var body bson.Raw
	for p := headerLen + 4; p < len(req); {
		kind := req[p]
		p++
		if p+4 > len(req) {
			return nil, false
		}
		size := int(int32(binary.LittleEndian.Uint32(req[p : p+4])))
		if size < 5 || p+size > len(req) {
			return nil, false
		}
		sec := req[p : p+size]
		p += size
		switch kind {
		case 0:
			body = bson.Raw(sec)
		case 1: // int32 size, cstring identifier, documents
			i := bytes.IndexByte(sec[4:], 0)
			if i < 0 || string(sec[4:4+i]) != "updates" {
				return nil, false
			}
			for docs := sec[4+i+1:]; len(docs) > 0; {
				if len(docs) < 5 {
					return nil, false
				}
				n := int(int32(binary.LittleEndian.Uint32(docs[:4])))
				if n < 5 || n > len(docs) {
					return nil, false
				}
				u.stmts = append(u.stmts, bson.Raw(docs[:n]))
				docs = docs[n:]
			}
		default:
			return nil, false
		}
	}
	if body == nil {
		return nil, false
	}
	elems, err := body.Elements()
	if err != nil {
		return nil, false
	}
	kept := []byte{0, 0, 0, 0}
	for _, e := range elems {
		switch e.Key() {
		case "updates":
			arr, ok := e.Value().ArrayOK()
			if !ok {
				return nil, false
			}
			vals, err := arr.Values()
			if err != nil {
				return nil, false
			}
			for _, v := range vals {
				d, ok := v.DocumentOK()
				if !ok {
					return nil, false
				}
				u.stmts = append(u.stmts, d)
			}
			continue
		case "ordered":
			if b, ok := e.Value().BooleanOK(); ok {
				u.ordered = b
			}
		}
		kept = append(kept, e...)
	}
	kept = append(kept, 0)
	binary.LittleEndian.PutUint32(kept, uint32(len(kept)))
	u.body = kept
	if len(u.stmts) == 0 {
		return nil, false // FerretDB answers that error itself
	}
	return u, true
}

// message returns the update command for one statement, as an OP_MSG
// with the client's request id (FerretDB's answer refers to it).
func (u *update) message(stmt bson.Raw) []byte {
	seq := 4 + len("updates\x00") + len(stmt)
	n := headerLen + 4 + 1 + len(u.body) + 1 + seq
	msg := make([]byte, 0, n)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(n))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(u.requestID))
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = binary.LittleEndian.AppendUint32(msg, opMsg)
	msg = binary.LittleEndian.AppendUint32(msg, 0) // flags: every statement is answered
	msg = append(msg, 0)
	msg = append(msg, u.body...)
	msg = append(msg, 1)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(seq))
	msg = append(msg, "updates\x00"...)
	return append(msg, stmt...)
}

// run sends the statements one by one and returns MongoDB's answer to the
// whole command.
func (u *update) run(up net.Conn, ur *bufio.Reader) ([]byte, error) {
	var (
		n, modified int32
		upserted    bson.A
		writeErrors bson.A
	)
	// Each statement, or the statements one stands for (in.go), with the
	// index of the statement the client sent.
	type part struct {
		i    int
		stmt bson.Raw
	}
	var parts []part
	for i, stmt := range u.stmts {
		for _, s := range splitStatement(stmt) {
			parts = append(parts, part{i, s})
		}
	}
	failedStmt := -1 // a statement ends at its first error, as on MongoDB
	for k, p := range parts {
		i, stmt := p.i, p.stmt
		if i == failedStmt {
			continue
		}
		if _, err := up.Write(u.message(stmt)); err != nil {
			return nil, err
		}
		resp, err := readMessage(ur)
		if err != nil {
			return nil, err
		}
		resp = asMongoDBError(resp)
		body, ok := msgBody(resp)
		if !ok {
			return nil, errors.New("an update answer that is not a one-section OP_MSG")
		}
		if okv, _ := body.Lookup("ok").AsInt32OK(); okv != 1 {
			code, _ := body.Lookup("code").AsInt32OK()
			if k == 0 && code != duplicateKeyCode {
				// The command itself is wrong (a bad namespace, a bad
				// parameter): MongoDB answers that as one error too.
				return resp, nil
			}
			msg, _ := body.Lookup("errmsg").StringValueOK()
			writeErrors = append(writeErrors, bson.D{{Key: "index", Value: int32(i)}, {Key: "code", Value: code}, {Key: "errmsg", Value: msg}})
			if u.ordered {
				break
			}
			failedStmt = i
			continue
		}
		sn, _ := body.Lookup("n").AsInt32OK()
		sm, _ := body.Lookup("nModified").AsInt32OK()
		n += sn
		modified += sm
		if arr, ok := body.Lookup("upserted").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				if d, ok := v.DocumentOK(); ok {
					upserted = append(upserted, bson.D{{Key: "index", Value: int32(i)}, {Key: "_id", Value: d.Lookup("_id")}})
				}
			}
		}
		failed := false
		if arr, ok := body.Lookup("writeErrors").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				d, ok := v.DocumentOK()
				if !ok {
					continue
				}
				we := bson.D{{Key: "index", Value: int32(i)}}
				elems, _ := d.Elements()
				for _, e := range elems {
					if e.Key() != "index" {
						we = append(we, bson.E{Key: e.Key(), Value: e.Value()})
					}
				}
				writeErrors = append(writeErrors, we)
				failed = true
			}
		}
		if failed && u.ordered {
			break
		}
		if failed {
			failedStmt = i
		}
	}
	answer := bson.D{{Key: "n", Value: n}}
	if len(upserted) > 0 {
		answer = append(answer, bson.E{Key: "upserted", Value: upserted})
	}
	answer = append(answer, bson.E{Key: "nModified", Value: modified})
	if len(writeErrors) > 0 {
		answer = append(answer, bson.E{Key: "writeErrors", Value: writeErrors})
	}
	answer = append(answer, bson.E{Key: "ok", Value: 1.0})
	doc, err := bson.Marshal(answer)
	if err != nil {
		return nil, err
	}
	return replyMsg(u.requestID, doc), nil
}

// msgBody returns the document of an OP_MSG made of one body section, as
// FerretDB answers.
func msgBody(msg []byte) (bson.Raw, bool) {
	if len(msg) < headerLen+5 || opCode(msg) != opMsg ||
		binary.LittleEndian.Uint32(msg[16:20])&flagChecksumPresent != 0 || msg[headerLen+4] != 0 {
		return nil, false
	}
	body := bson.Raw(msg[headerLen+5:])
	if body.Validate() != nil {
		return nil, false
	}
	return body, true
}

// replyID numbers the answers the gate makes itself.
var replyID atomic.Int32

// replyMsg returns an OP_MSG answering requestID with doc.
func replyMsg(requestID int32, doc []byte) []byte {
	n := headerLen + 4 + 1 + len(doc)
	msg := make([]byte, 0, n)
	msg = binary.LittleEndian.AppendUint32(msg, uint32(n))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(replyID.Add(1)))
	msg = binary.LittleEndian.AppendUint32(msg, uint32(requestID))
	msg = binary.LittleEndian.AppendUint32(msg, opMsg)
	msg = binary.LittleEndian.AppendUint32(msg, 0)
	msg = append(msg, 0)
	return append(msg, doc...)
}
