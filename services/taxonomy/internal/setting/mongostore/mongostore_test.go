package mongostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/taxonomy/internal/setting"
	"github.com/doclib/services/taxonomy/internal/setting/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := mongostore.New(testkit.Mongo(t))
	if _, found, err := s.Get(ctx); err != nil || found {
		t.Fatalf("empty store: found %v, %v", found, err)
	}
	if rev, err := s.Revision(ctx); err != nil || rev != 0 {
		t.Fatalf("revision before any write: %d, %v; want 0", rev, err)
	}
	at := time.Date(2026, 11, 22, 10, 15, 30, 123000000, time.UTC)
	for i, email := range []string{"a@example.org", "b@example.org"} {
		want := setting.Settings{ModeratorEmail: email, UpdatedAt: at, UpdatedBy: "alice"}
		testkit.Must(t, s.Put(ctx, want, nil), "put")
		got, found, err := s.Get(ctx)
		if err != nil || !found || got != want {
			t.Fatalf("after put %d: %+v %v %v; want %+v", i+1, got, found, err, want)
		}
		if rev, err := s.Revision(ctx); err != nil || rev != int64(i+1) {
			t.Errorf("revision after put %d: %d, %v", i+1, rev, err)
		}
	}
}
