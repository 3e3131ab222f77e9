package mongox_test

import (
	"context"
	"sync"
	"testing"

	"github.com/doclib/libs/mongox"
	"github.com/doclib/libs/testkit"
)

// A revision starts at 0 and moves with every bump, concurrent first bumps
// included (they race on the upsert of the one document).
func TestRevision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.Mongo(t)
	r := mongox.NewRevision(db.Collection("meta"), "things", testkit.Logger(t))
	if v, err := r.Get(ctx); err != nil || v != 0 {
		t.Fatalf("Get before any write = %d, %v; want 0", v, err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); r.Bump(ctx) }()
	}
	wg.Wait()
	v, err := r.Get(ctx)
	if err != nil || v == 0 {
		t.Fatalf("Get after four bumps = %d, %v; want it moved", v, err)
	}
	r.Bump(ctx)
	if w, _ := r.Get(ctx); w == v {
		t.Errorf("Get after a bump = %d, unchanged", w)
	}
	other := mongox.NewRevision(db.Collection("meta"), "others", testkit.Logger(t))
	if w, _ := other.Get(ctx); w != 0 {
		t.Errorf("another revision in the same collection = %d, want 0", w)
	}
}
