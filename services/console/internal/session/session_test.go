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

// TestAddEndsWithTheToken: a session never outlives the access token it
// sends, nor the store's ttl.
func TestAddEndsWithTheToken(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	st := NewStore(time.Hour)
	st.now = func() time.Time { return now }
	for _, tc := range []struct {
		name   string
		tokens time.Time
		want   time.Time
	}{
		{"token ends first", now.Add(5 * time.Minute), now.Add(5 * time.Minute)},
		{"ttl ends first", now.Add(3 * time.Hour), now.Add(time.Hour)},
		{"token's end not said", time.Time{}, now.Add(time.Hour)},
	} {
		if s := st.Add(Session{Token: "jwt", Role: Viewer, Expires: tc.tokens}); !s.Expires.Equal(tc.want) {
			t.Errorf("%s: expires %v, want %v", tc.name, s.Expires, tc.want)
		}
	}
	s := st.Add(Session{Token: "jwt", Role: Editor, Expires: now.Add(5 * time.Minute)})
	now = now.Add(5 * time.Minute)
	if _, ok := st.Get(s.ID); ok {
		t.Fatal("the session outlived its access token")
	}
}

// TestSharedKey: a session sealed by one replica (or before a restart)
// opens with another store of the same key, not with another key's, and
// not once changed.
func TestSharedKey(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef0123456789abcdef-shared")
	a, err := NewSealedStore(key, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSealedStore(key, time.Hour)
	s := a.Create("tok", "alice", Editor)
	if got, ok := b.Get(s.ID); !ok || got.Name != "alice" || got.Token != "tok" {
		t.Fatalf("another replica opens %+v, %v; want alice's session", got, ok)
	}
	if _, ok := NewStore(time.Hour).Get(s.ID); ok {
		t.Fatal("a store with another key opened the session")
	}
	changed := []byte(s.ID)
	changed[10] ^= 1
	if _, ok := b.Get(string(changed)); ok {
		t.Fatal("a changed cookie opened")
	}
	if _, err := NewSealedStore([]byte("short"), time.Hour); err == nil {
		t.Fatal("a short key was taken")
	}
}
