package mongostore_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
	"github.com/doclib/services/catalog/internal/document/mongostore"
)

// revisionOf is a revision of a MARKDOWN document of about 1 KB: a title,
// two tags, 800 bytes of content, a source and an image.
func revisionOf(id string, v int64) document.Revision {
	at := t0.Add(time.Duration(v) * time.Minute)
	d := document.Document{ID: id, Title: fmt.Sprintf("Fiche %s v%d", id, v), Type: document.Markdown,
		TagsIDs: []string{"vaccines", "kids"}, Content: strings.Repeat("Lorem ipsum dolor sit amet. ", 29),
		Sources: []string{"Santé publique France, 2025"}, ImagesIDs: []string{"i8NcR5tYw2LqZ0pVb7KhEg"},
		CreatedAt: t0, UpdatedAt: at, CreatedBy: "alice", UpdatedBy: "bob", Seq: v, Version: v, Status: document.Published,
		Change: document.Change{By: "bob", At: at, Why: document.WhyUpdate}}
	return document.Revision{DocumentID: id, Version: v, Change: d.Change, Doc: d}
}

func newBenchStore(b *testing.B) *mongostore.Store {
	b.Helper()
	s := mongostore.New(testkit.Mongo(b), slog.New(slog.DiscardHandler))
	testkit.Must(b, s.EnsureIndexes(context.Background()), "EnsureIndexes")
	return s
}

// BenchmarkRevisionList reads the first page (50) of the revisions of a
// document with 1,000 of them, among the revisions of 9 other documents
// (1,000 each): issue 24 asks p99 under 20 ms. Reported: p50 and p99.
func BenchmarkRevisionList(b *testing.B) {
	s, ctx := newBenchStore(b), context.Background()
	for doc := range 10 {
		var revs []document.Revision
		for v := range int64(1000) {
			revs = append(revs, revisionOf(fmt.Sprint("doc", doc), v+1))
		}
		testkit.Must(b, s.InsertRevisions(ctx, revs), "InsertRevisions")
	}
	var took []time.Duration
	b.ResetTimer()
	for range max(b.N, 300) {
		start := time.Now()
		page, err := s.ListRevisions(ctx, "doc3", 1001, 50, false)
		took = append(took, time.Since(start))
		if err != nil || len(page) != 50 || page[0].Version != 1000 {
			b.Fatalf("page of %d, %v", len(page), err)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRevisionStorage stores the revisions of 1,000 documents edited
// 100 times each and reports the collection's size as the database gives
// it (collStats): data, storage and indexes, in MiB. BENCH_REVISION_DOCS
// sets fewer documents (a quicker run, figures scaled by the reader).
func BenchmarkRevisionStorage(b *testing.B) {
	s, ctx := newBenchStore(b), context.Background()
	docs := 1000
	if n, err := strconv.Atoi(os.Getenv("BENCH_REVISION_DOCS")); err == nil && n > 0 {
		docs = n
	}
	for doc := range docs {
		revs := make([]document.Revision, 0, 100)
		for v := range int64(100) {
			revs = append(revs, revisionOf(fmt.Sprintf("doc%04d", doc), v+1))
		}
		testkit.Must(b, s.InsertRevisions(ctx, revs), "InsertRevisions")
	}
	size, storage, indexes, err := s.RevisionStorage(ctx)
	testkit.Must(b, err, "collStats")
	b.ReportMetric(float64(size)/(1<<20), "data-MiB")
	b.ReportMetric(float64(storage)/(1<<20), "storage-MiB")
	b.ReportMetric(float64(indexes)/(1<<20), "index-MiB")
}
