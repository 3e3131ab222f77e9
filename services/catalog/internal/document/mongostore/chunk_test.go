package mongostore

import (
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// A tag deletion's grouped update names its documents in statements of at
// most idChunk ids, each well under MongoDB's 16 MB for a command: one
// statement naming every id of a tag on 500,000 documents was 17.4 MB.
func TestATagDropOfManyDocumentsIsChunked(t *testing.T) {
	t.Parallel()
	const n = 500000
	g := &tagDrop{tags: []string{"gone"}, version: true}
	for i := range n {
		g.ids = append(g.ids, fmt.Sprintf("%022d", i)) // the size of a document id
	}
	models := g.models(7)
	if want := (n + idChunk - 1) / idChunk; len(models) != want {
		t.Fatalf("%d statements for %d documents, want %d of at most %d", len(models), n, want, idChunk)
	}
	seen := map[string]bool{}
	for i, m := range models {
		u := m.(*mongo.UpdateManyModel)
		raw, err := bson.Marshal(bson.M{"q": u.Filter, "u": u.Update})
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) > 1<<20 {
			t.Errorf("statement %d is %d bytes, want well under MongoDB's 16 MB", i, len(raw))
		}
		ids := u.Filter.(bson.M)["_id"].(bson.M)["$in"].([]string)
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("document %s is in two statements", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != n {
		t.Errorf("the statements name %d documents, want %d", len(seen), n)
	}
}
