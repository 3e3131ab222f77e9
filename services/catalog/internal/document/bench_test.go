package document_test

import (
	"context"
	"fmt"
	"github.com/doclib/services/catalog/internal/document/mongostore"
	"log/slog"
	"testing"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// BenchmarkPatch is a PATCH of one document through the domain service
// and the development database, with revisions kept and without (the
// baseline): issue 24 asks at most 1.3x.
func BenchmarkPatch(b *testing.B) {
	for _, keep := range []bool{false, true} {
		b.Run(fmt.Sprintf("revisions=%v", keep), func(b *testing.B) {
			svc, _ := newBenchService(b)
			if !keep {
				document.WithoutRevisions(svc)
			}
			ctx := context.Background()
			d, err := svc.Create(ctx, newDoc)
			testkit.Must(b, err, "Create")
			in := newDoc
			b.ResetTimer()
			for i := range b.N {
				in.Title = fmt.Sprint("T", i)
				if _, err := svc.Update(ctx, d.ID, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func newBenchService(b *testing.B) (*document.Service, *mongostore.Store) {
	b.Helper()
	store := mongostore.New(testkit.Mongo(b), slog.New(slog.DiscardHandler))
	testkit.Must(b, store.EnsureIndexes(context.Background()), "EnsureIndexes")
	return document.NewService(store, newWorld(), slog.New(slog.DiscardHandler)), store
}
