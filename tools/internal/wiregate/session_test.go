package wiregate

import (
	"encoding/binary"
	"testing"

	"go.mongodb.org/mongo-driver/bson"
)

// TestHelloAsPrimary: FerretDB's hello, as an OP_MSG or as the OP_REPLY to
// a legacy handshake, comes back as the primary of a one-member replica
// set at the address the client dialled, FerretDB's own fields kept.
func TestHelloAsPrimary(t *testing.T) {
	ferret := bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "maxWireVersion", Value: int32(21)},
		{Key: "logicalSessionTimeoutMinutes", Value: int32(30)}, {Key: "ok", Value: 1.0}}
	b, _ := bson.Marshal(ferret)
	reply := binary.LittleEndian.AppendUint32(nil, 8)  // responseFlags: AwaitCapable
	reply = binary.LittleEndian.AppendUint64(reply, 0) // cursorID
	reply = binary.LittleEndian.AppendUint32(reply, 0) // startingFrom
	reply = binary.LittleEndian.AppendUint32(reply, 1) // numberReturned
	for name, resp := range map[string][]byte{
		"OP_MSG":   opMsgOf(t, 0, ferret, false),
		"OP_REPLY": wireMsg(3, 1, 1, append(reply, b...)),
	} {
		out := asPrimary(resp, "127.0.0.1:4242")
		at := headerLen + 5
		if name == "OP_REPLY" {
			at = headerLen + 20
		}
		if int(binary.LittleEndian.Uint32(out[0:4])) != len(out) {
			t.Fatalf("%s: message length %d, want %d", name, binary.LittleEndian.Uint32(out[0:4]), len(out))
		}
		var got struct {
			SetName  string   `bson:"setName"`
			Hosts    []string `bson:"hosts"`
			Me       string   `bson:"me"`
			Primary  string   `bson:"primary"`
			Writable bool     `bson:"isWritablePrimary"`
			Wire     int32    `bson:"maxWireVersion"`
			Sessions int32    `bson:"logicalSessionTimeoutMinutes"`
			OK       float64  `bson:"ok"`
		}
		if err := bson.Unmarshal(out[at:], &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.SetName != ReplicaSetName || len(got.Hosts) != 1 || got.Hosts[0] != "127.0.0.1:4242" ||
			got.Me != "127.0.0.1:4242" || got.Primary != "127.0.0.1:4242" || !got.Writable ||
			got.Wire != 21 || got.Sessions != 30 || got.OK != 1 {
			t.Errorf("%s: %+v, want the primary of %s at 127.0.0.1:4242 with FerretDB's fields", name, got, ReplicaSetName)
		}
	}
	failed := opMsgOf(t, 0, bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "no"}}, false)
	if string(asPrimary(failed, "x:1")) != string(failed) {
		t.Error("a failed hello was rewritten")
	}
}

// TestSessionFieldsNeverReachFerretDB: FerretDB v1 refuses txnNumber,
// autocommit and startTransaction on some commands; the gate drops them
// and keeps the rest, document sequences included.
func TestSessionFieldsNeverReachFerretDB(t *testing.T) {
	req := opMsgOf(t, flagChecksumPresent, bson.D{{Key: "update", Value: "c"}, {Key: "txnNumber", Value: int64(3)},
		{Key: "autocommit", Value: false}, {Key: "startTransaction", Value: true}, {Key: "$db", Value: "d"}}, true)
	req = binary.LittleEndian.AppendUint32(req, 0) // the checksum
	binary.LittleEndian.PutUint32(req[0:4], uint32(len(req)))
	c := parseCommand(req)
	if !c.hasTxn || c.txnNumber != 3 || !c.inTxn || !c.start {
		t.Fatalf("parsed %+v, want txnNumber 3 in a starting transaction", c)
	}
	out := withoutFields(req, sessionFields)
	body, seqs, ok := msgSections(out)
	if !ok || int(binary.LittleEndian.Uint32(out[0:4])) != len(out) {
		t.Fatal("the rewritten message does not read")
	}
	if got := body.String(); got != `{"update": "c","$db": "d"}` {
		t.Errorf("body %s, want the session fields gone", got)
	}
	if len(seqs["updates"]) != 1 {
		t.Errorf("document sequence %v, want it kept", seqs)
	}
	if binary.LittleEndian.Uint32(out[16:20])&flagChecksumPresent != 0 {
		t.Error("the checksum flag is still set")
	}
}

func TestPipelinesThatWriteAreNotForTransactions(t *testing.T) {
	for _, tc := range []struct {
		stage string
		want  bool
	}{{"$match", false}, {"$out", true}, {"$merge", true}} {
		b, _ := bson.Marshal(bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: tc.stage, Value: "x"}}}}})
		if got := writesThroughPipeline(command{name: "aggregate", body: b}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.stage, got, tc.want)
		}
	}
}
