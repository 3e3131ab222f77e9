package wiregate

import (
	"encoding/binary"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/bson"
)

func internalError(msg string) bson.D {
	return bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: msg},
		{Key: "code", Value: int32(1)}, {Key: "codeName", Value: "InternalError"}}
}

// FerretDB's messages, as it sends them.
const (
	ferretDuplicate = `[collection.go:218] ERROR: duplicate key value violates unique constraint "c_idx" (SQLSTATE 23505)`
	ferretFindTime  = "[msg_find.go:344 handler.handleMaxTimeMSError] " +
		"[collection.go:109 postgresql.(*collection).Query] timeout: read tcp 127.0.0.1:50792->127.0.0.1:41413: i/o timeout"
	ferretMoreTime = "[msg_getmore.go:261 handler.(*Handler).makeNextBatch] [iterator.go:127 postgresql.(*queryIterator).Next] " +
		"timeout: read tcp 127.0.0.1:50792->127.0.0.1:41413: i/o timeout"
)

func TestInternalErrorsAsMongoDB(t *testing.T) {
	for _, c := range []struct {
		msg, codeName, prefix string
		code                  int32
	}{
		{ferretDuplicate, "DuplicateKey", "E11000 ", 11000},
		{"UNIQUE constraint failed: c._jsonb", "DuplicateKey", "E11000 ", 11000},
		{ferretFindTime, "MaxTimeMSExpired", "operation exceeded time limit", 50},
		{ferretMoreTime, "MaxTimeMSExpired", "operation exceeded time limit", 50},
	} {
		out := asMongoDBError(opMsgOf(t, 0, internalError(c.msg), false))
		var body bson.D
		if err := bson.Unmarshal(out[headerLen+5:], &body); err != nil {
			t.Fatal(err)
		}
		m := body.Map()
		if m["code"] != c.code || m["codeName"] != c.codeName || !strings.HasPrefix(m["errmsg"].(string), c.prefix) {
			t.Errorf("%s: got %v, want %s", c.msg, body, c.codeName)
		}
		if n := binary.LittleEndian.Uint32(out[0:4]); int(n) != len(out) {
			t.Errorf("message length %d, want %d", n, len(out))
		}
	}
	for _, doc := range []bson.D{
		internalError("boom"),
		internalError("[msg_find.go:344 handler.handleMaxTimeMSError] some bug"),
		{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "i/o timeout"}, {Key: "code", Value: int32(2)}},
		// A document that merely holds the words is no error.
		{{Key: "cursor", Value: bson.D{{Key: "firstBatch", Value: bson.A{bson.D{{Key: "code", Value: int32(1)},
			{Key: "errmsg", Value: "i/o timeout"}}}}}}, {Key: "ok", Value: 1.0}},
	} {
		in := opMsgOf(t, 0, doc, false)
		if string(asMongoDBError(in)) != string(in) {
			t.Errorf("%v was changed", doc)
		}
	}
}

// A read out of time reaches the client as MongoDB's MaxTimeMSExpired, a
// cursor's getMore included.
func TestTimeOutAnsweredAsMongoDB(t *testing.T) {
	for _, c := range []struct {
		req bson.D
		msg string
	}{
		{bson.D{{Key: "find", Value: "c"}, {Key: "maxTimeMS", Value: int64(10)}, {Key: "$db", Value: "d"}}, ferretFindTime},
		{bson.D{{Key: "getMore", Value: int64(7)}, {Key: "collection", Value: "c"}, {Key: "$db", Value: "d"}}, ferretMoreTime},
		{bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{}}, {Key: "$db", Value: "d"}}, ferretFindTime},
	} {
		body, _ := exchangeWith(t, opMsgOf(t, 0, c.req, false), func(bson.Raw, []bson.Raw) bson.D { return internalError(c.msg) })
		if code, _ := body.Lookup("code").AsInt32OK(); code != 50 || body.Lookup("codeName").StringValue() != "MaxTimeMSExpired" {
			t.Errorf("%s: got %v, want MaxTimeMSExpired (50)", c.req[0].Key, body)
		}
	}
}
