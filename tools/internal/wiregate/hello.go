package wiregate

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/bson/primitive"
)

// The gate answers hello as the primary of a replica set of one member,
// itself: production runs on a replica set, and a driver uses sessions'
// transactions and retryable writes only with a replica set member (a
// standalone refuses txnNumber). FerretDB's own answer (wire versions,
// limits, session timeout) is kept; the replica set's fields are the
// gate's.
//
// hosts and me name the address the client reached the gate on (the
// connection's local address). A driver given a URI with neither
// replicaSet nor directConnection discovers the set: it keeps the seed only
// if hosts holds it, and otherwise connects to the hosts listed. So a
// client that dials the gate directly (mongodb://127.0.0.1:PORT/, as every
// development and test URI is) keeps its connection; one behind a proxy
// must say directConnection=true, as it would with a real replica set.

// ReplicaSetName is the set the gate's hello names, as compose.yaml's
// MongoDB does.
const ReplicaSetName = "rs0"

// electionID is the constant term of the one primary there ever is.
var electionID = primitive.ObjectID{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 1}

func isHello(name string) bool {
	return name == "hello" || name == "isMaster" || name == "ismaster"
}

// asPrimary rewrites FerretDB's answer to a hello (an OP_MSG, or the
// OP_REPLY to a legacy OP_QUERY handshake) as the primary me's. Anything
// it cannot read comes back unchanged.
func asPrimary(resp []byte, me string) []byte {
	const opReply, replyDocAt = 1, headerLen + 20
	var at int
	switch {
	case opCode(resp) == opMsg:
		if _, ok := msgBody(resp); !ok {
			return resp
		}
		at = headerLen + 5
	case opCode(resp) == opReply && len(resp) > replyDocAt:
		if binary.LittleEndian.Uint32(resp[headerLen+16:headerLen+20]) != 1 {
			return resp
		}
		at = replyDocAt
	default:
		return resp
	}
	var doc bson.D
	if err := bson.Unmarshal(resp[at:], &doc); err != nil {
		return resp
	}
	if ok, _ := doc.Map()["ok"].(float64); ok != 1 {
		return resp
	}
	set := bson.D{
		{Key: "setName", Value: ReplicaSetName},
		{Key: "setVersion", Value: int32(1)},
		{Key: "electionId", Value: electionID},
		{Key: "secondary", Value: false},
		{Key: "hosts", Value: bson.A{me}},
		{Key: "primary", Value: me},
		{Key: "me", Value: me},
	}
	out := bson.D{}
	for _, e := range doc {
		switch e.Key {
		case "setName", "setVersion", "electionId", "secondary", "hosts", "primary", "me", "topologyVersion", "ok":
			continue // the gate's, or (topologyVersion) a promise of streaming it does not keep
		}
		out = append(out, e)
	}
	if _, ok := doc.Map()["logicalSessionTimeoutMinutes"]; !ok {
		out = append(out, bson.E{Key: "logicalSessionTimeoutMinutes", Value: int32(30)})
	}
	out = append(out, set...)
	out = append(out, bson.E{Key: "ok", Value: 1.0})
	b, err := bson.Marshal(out)
	if err != nil {
		return resp
	}
	msg := append([]byte(nil), resp[:at]...)
	msg = append(msg, b...)
	binary.LittleEndian.PutUint32(msg[0:4], uint32(len(msg)))
	return msg
}
