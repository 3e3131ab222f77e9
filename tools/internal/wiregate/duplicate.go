package wiregate

import (
	"bytes"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/bson"
)

// FerretDB v1 turns a unique-index violation into E11000 only on insert;
// an update or findAndModify that breaks a unique index answers
// InternalError with the backend's own message (postgresql/collection.go
// and sqlite/collection.go in v1.24). MongoDB answers DuplicateKey (11000)
// to both, and that is what the services test for. The backends' messages:
var duplicateMarks = [][]byte{
	[]byte("duplicate key value violates unique constraint"), // PostgreSQL
	[]byte("UNIQUE constraint failed"),                       // SQLite
}

const duplicateKeyCode = 11000

// duplicateKeyAsMongoDB rewrites an InternalError answer caused by a
// unique index into MongoDB's DuplicateKey error; any other answer comes
// back unchanged.
func duplicateKeyAsMongoDB(resp []byte) []byte {
	if opCode(resp) != opMsg || !containsAny(resp, duplicateMarks) {
		return resp
	}
	flags := binary.LittleEndian.Uint32(resp[16:20])
	if flags&flagChecksumPresent != 0 || len(resp) < headerLen+5 || resp[headerLen+4] != 0 {
		return resp // not the one-section answer FerretDB sends
	}
	var body bson.D
	if err := bson.Unmarshal(resp[headerLen+5:], &body); err != nil {
		return resp
	}
	m := body.Map()
	if code, _ := m["code"].(int32); code != 1 { // InternalError
		return resp
	}
	msg, _ := m["errmsg"].(string)
	doc, err := bson.Marshal(bson.D{
		{Key: "ok", Value: 0.0},
		{Key: "errmsg", Value: "E11000 duplicate key error (FerretDB: " + msg + ")"},
		{Key: "code", Value: int32(duplicateKeyCode)},
		{Key: "codeName", Value: "DuplicateKey"},
	})
	if err != nil {
		return resp
	}
	out := make([]byte, 0, headerLen+5+len(doc))
	out = binary.LittleEndian.AppendUint32(out, uint32(headerLen+5+len(doc)))
	out = append(out, resp[4:headerLen]...) // request id, response to, op code
	out = binary.LittleEndian.AppendUint32(out, flags)
	out = append(out, 0)
	return append(out, doc...)
}

func containsAny(b []byte, marks [][]byte) bool {
	for _, m := range marks {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}
