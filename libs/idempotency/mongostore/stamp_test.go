package mongostore_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/doclib/libs/idempotency/mongostore"
)

// The key index must be unique (one record per key) and sparse (the
// records without a key do not collide): FerretDB 1.x ignores sparse, so
// only this test sees it go, before MongoDB refuses to build the index.
func TestKeyIndexIsUniqueAndSparse(t *testing.T) {
	var o options.IndexOptions
	for _, set := range mongostore.KeyIndex().Options.List() {
		if err := set(&o); err != nil {
			t.Fatal(err)
		}
	}
	if o.Unique == nil || !*o.Unique || o.Sparse == nil || !*o.Sparse || o.Name == nil || *o.Name != mongostore.KeyField {
		t.Errorf("the key index: unique %v, sparse %v, name %v; want unique, sparse, named %s", o.Unique, o.Sparse, o.Name, mongostore.KeyField)
	}
}
