package session

import (
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	st := NewStore(time.Hour)
	st.now = func() time.Time { return now }
	s := st.Create("tok", "alice", Editor)
	if len(s.ID) < 40 {
		t.Fatalf("id %q is too short to be unguessable", s.ID)
	}
	if got, ok := st.Get(s.ID); !ok || got.Token != "tok" || !got.CanEdit() {
		t.Fatalf("Get = %+v, %v; want the editor's session", got, ok)
	}
	if _, ok := st.Get("another-deployments-cookie"); ok {
		t.Fatal("an unknown id found a session")
	}
	other := st.Create("tok2", "bob", Viewer)
	st.Delete(other.ID)
	if _, ok := st.Get(other.ID); ok {
		t.Fatal("a signed-out session is still found")
	}
	now = now.Add(time.Hour)
	if _, ok := st.Get(s.ID); ok {
		t.Fatal("an expired session is still found")
	}
}
