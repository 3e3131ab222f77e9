package mongostore

import (
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/services/taxonomy/internal/tag"
)

// MongoDB says which unique index an insert broke (keyPattern): no query
// is needed to tell a taken id from a taken name.
func TestWhichDuplicateFromMongoDBsError(t *testing.T) {
	for _, c := range []struct {
		keys bson.D
		want error
	}{
		{bson.D{{Key: "id", Value: 1}}, tag.ErrDuplicateID},
		{bson.D{{Key: "categoryRef", Value: 1}, {Key: "nameKey", Value: 1}}, tag.ErrDuplicateName},
		{bson.D{{Key: "nameKey", Value: 1}}, tag.ErrDuplicateName},
	} {
		raw, _ := bson.Marshal(bson.D{{Key: "code", Value: 11000}, {Key: "keyPattern", Value: c.keys}})
		err := mongo.WriteException{WriteErrors: []mongo.WriteError{{Code: 11000, Raw: raw}}}
		if got := duplicate(err); !errors.Is(got, c.want) {
			t.Errorf("keyPattern %v: %v, want %v", c.keys, got, c.want)
		}
	}
}
