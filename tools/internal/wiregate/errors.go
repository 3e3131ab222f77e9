package wiregate

import (
	"bytes"
	"encoding/binary"
	"strings"

	"go.mongodb.org/mongo-driver/bson"
)

// FerretDB v1 answers InternalError, with its backend's own message, to
// failures MongoDB names with a code of their own. The gate rewrites
// those answers into MongoDB's, so the services only ever see MongoDB's
// errors. Each rewrite applies to an InternalError (code 1) answer whose
// message holds one of its marks and passes its test.
type errorRewrite struct {
	marks [][]byte
	match func(errmsg string) bool
	code  int32
	name  string
	msg   string
}

var errorRewrites = []errorRewrite{
	// An update or findAndModify that breaks a unique index (FerretDB turns
	// it into E11000 only on insert: postgresql/collection.go and
	// sqlite/collection.go in v1.24). MongoDB answers DuplicateKey.
	{
		marks: [][]byte{
			[]byte("duplicate key value violates unique constraint"), // PostgreSQL
			[]byte("UNIQUE constraint failed"),                       // SQLite
		},
		code: duplicateKeyCode, name: "DuplicateKey", msg: "E11000 duplicate key error",
	},
	// A command that ran out of its maxTimeMS while its backend read was
	// under way: "[msg_find.go:344 handler.handleMaxTimeMSError]
	// [collection.go:109 postgresql.(*collection).Query] timeout: read tcp
	// ...: i/o timeout", and the same from a cursor's getMore. MongoDB
	// answers MaxTimeMSExpired (50), which drivers report as a time-out.
	{
		marks: [][]byte{[]byte("handleMaxTimeMSError"), []byte("i/o timeout"), []byte("context deadline exceeded")},
		match: func(m string) bool {
			return strings.Contains(m, "i/o timeout") || strings.Contains(m, "context deadline exceeded") ||
				strings.Contains(m, "handleMaxTimeMSError") && strings.Contains(m, "timeout")
		},
		code: maxTimeMSExpiredCode, name: "MaxTimeMSExpired", msg: "operation exceeded time limit",
	},
}

const (
	duplicateKeyCode     = 11000
	maxTimeMSExpiredCode = 50
)

// asMongoDBError rewrites an InternalError answer that MongoDB would give
// as another error into MongoDB's; any other answer comes back unchanged.
func asMongoDBError(resp []byte) []byte {
	for _, r := range errorRewrites {
		if out, ok := r.apply(resp); ok {
			return out
		}
	}
	return resp
}

func (r errorRewrite) apply(resp []byte) ([]byte, bool) {
	if opCode(resp) != opMsg || !containsAny(resp, r.marks) {
		return nil, false
	}
	flags := binary.LittleEndian.Uint32(resp[16:20])
	if flags&flagChecksumPresent != 0 || len(resp) < headerLen+5 || resp[headerLen+4] != 0 {
		return nil, false // not the one-section answer FerretDB sends
	}
	var body bson.D
	if err := bson.Unmarshal(resp[headerLen+5:], &body); err != nil {
		return nil, false
	}
	m := body.Map()
	if code, _ := m["code"].(int32); code != codeInternalError {
		return nil, false
	}
	msg, _ := m["errmsg"].(string)
	if r.match != nil && !r.match(msg) {
		return nil, false
	}
	doc, err := bson.Marshal(bson.D{
		{Key: "ok", Value: 0.0},
		{Key: "errmsg", Value: r.msg + " (FerretDB: " + msg + ")"},
		{Key: "code", Value: r.code},
		{Key: "codeName", Value: r.name},
	})
	if err != nil {
		return nil, false
	}
	out := make([]byte, 0, headerLen+5+len(doc))
	out = binary.LittleEndian.AppendUint32(out, uint32(headerLen+5+len(doc)))
	out = append(out, resp[4:headerLen]...) // request id, response to, op code
	out = binary.LittleEndian.AppendUint32(out, flags)
	out = append(out, 0)
	return append(out, doc...), true
}

func containsAny(b []byte, marks [][]byte) bool {
	for _, m := range marks {
		if bytes.Contains(b, m) {
			return true
		}
	}
	return false
}
