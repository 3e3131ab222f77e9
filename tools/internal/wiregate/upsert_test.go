package wiregate

import (
	"testing"

	"go.mongodb.org/mongo-driver/bson"
)

// An upsert by _id is first sent as a plain update (under that document's
// lock only); the upsert itself goes to FerretDB only when that matched
// nothing.
func TestUpsertByIDTriedAsUpdate(t *testing.T) {
	stmt := bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: "x"}}},
		{Key: "u", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "upsert", Value: true}}
	req := seqMsgOf(t, bson.D{{Key: "update", Value: "c"}, {Key: "ordered", Value: true}, {Key: "$db", Value: "d"}}, "updates", stmt)
	for _, exists := range []bool{true, false} {
		var sent []bool // upsert, by statement sent
		body, _ := exchangeWith(t, req, func(_ bson.Raw, stmts []bson.Raw) bson.D {
			upsert, _ := stmts[0].Lookup("upsert").BooleanOK()
			sent = append(sent, upsert)
			if !upsert && !exists {
				return bson.D{{Key: "n", Value: int32(0)}, {Key: "nModified", Value: int32(0)}, {Key: "ok", Value: 1.0}}
			}
			return bson.D{{Key: "n", Value: int32(1)}, {Key: "nModified", Value: int32(1)}, {Key: "ok", Value: 1.0}}
		})
		want := []bool{false}
		if !exists {
			want = []bool{false, true}
		}
		if len(sent) != len(want) || sent[0] != want[0] || len(sent) > 1 && sent[1] != want[1] {
			t.Errorf("document there: %v: FerretDB got statements with upsert %v, want %v", exists, sent, want)
		}
		if n, _ := body.Lookup("n").AsInt32OK(); n != 1 {
			t.Errorf("document there: %v: answer %v, want n: 1", exists, body)
		}
	}
}
