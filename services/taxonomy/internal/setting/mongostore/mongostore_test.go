package mongostore_test

import (
	"context"
	"testing"
	"time"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/taxonomy/internal/setting"
	"github.com/doclib/services/taxonomy/internal/setting/mongostore"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// newStore returns a store on a fresh database, and its outbox.
func newStore(t *testing.T) (*mongostore.Store, *outbox.Outbox) {
	t.Helper()
	db := testkit.Mongo(t)
	box := outbox.New(db, testkit.Logger(t))
	return mongostore.New(db, box), box
}

func TestStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newStore(t)
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

// Every write of the settings records library.taxonomy.config.changed in
// its transaction, with the new address, its author and its time; an
// import onto settings already set records nothing.
func TestWritesRecordTheirEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, box := newStore(t)
	at := time.Date(2026, 11, 22, 10, 15, 30, 123000000, time.UTC)
	created, err := s.Create(ctx, setting.Settings{ModeratorEmail: "a@example.org", UpdatedAt: at, UpdatedBy: "importer"})
	testkit.Must(t, err, "create")
	if !created {
		t.Fatal("first create: created false")
	}
	if created, err := s.Create(ctx, setting.Settings{ModeratorEmail: "x@example.org", UpdatedAt: at}); err != nil || created {
		t.Fatalf("second create: %v, %v; want false, nil", created, err)
	}
	testkit.Must(t, s.Put(ctx, setting.Settings{ModeratorEmail: "b@example.org", UpdatedAt: at.Add(time.Second), UpdatedBy: "alice"}, nil), "put")
	evs, err := box.Pending(ctx)
	testkit.Must(t, err, "pending")
	want := []string{`{"moderatorEmail":"a@example.org","actor":"importer"}`, `{"moderatorEmail":"b@example.org","actor":"alice"}`}
	if len(evs) != len(want) {
		t.Fatalf("recorded %d events, want %d", len(evs), len(want))
	}
	for i, w := range want {
		if evs[i].Type != events.ConfigChanged || string(evs[i].Data) != w || !evs[i].Time.Equal(at.Add(time.Duration(i)*time.Second)) {
			t.Errorf("event %d = %s %s at %v, want %s %s", i, evs[i].Type, evs[i].Data, evs[i].Time, events.ConfigChanged, w)
		}
	}
}
