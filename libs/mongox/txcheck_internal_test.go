package mongox

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// A standalone server fails the start-up check with the message that
// says what production needs; a replica set member or a mongos passes.
func TestTransactionsIn(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hello bson.D
		ok    bool
	}{
		{"standalone", bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "logicalSessionTimeoutMinutes", Value: 30}}, false},
		{"replica set primary", bson.D{{Key: "isWritablePrimary", Value: true}, {Key: "setName", Value: "rs0"}, {Key: "logicalSessionTimeoutMinutes", Value: 30}}, true},
		{"mongos", bson.D{{Key: "msg", Value: "isdbgrid"}, {Key: "logicalSessionTimeoutMinutes", Value: 30}}, true},
		{"no sessions", bson.D{{Key: "setName", Value: "rs0"}}, false},
	} {
		raw, err := bson.Marshal(tc.hello)
		if err != nil {
			t.Fatal(err)
		}
		err = transactionsIn(raw)
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrNoTransactions)) {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	if got := ErrNoTransactions.Error(); got != "MongoDB transactions are not available: production needs a replica set (one member is enough)" {
		t.Errorf("message %q", got)
	}
}
