// Package session owns the console's sign-in sessions: a random id in an
// HttpOnly cookie, the person's bearer token, name and role kept on the
// server, an expiry, and sign-out that ends the session on the server.
//
// The store is in the process's memory: a second replica does not know
// the first one's sessions, so replicas need sticky sessions at the
// ingress (README, Console), and a restart signs everyone out.
package session

import (
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"
)

// Role is what the person may do, as the gateway decides it.
type Role string

// The back-office roles.
const (
	Viewer Role = "viewer"
	Editor Role = "editor"
)

// Session is one signed-in person.
type Session struct {
	ID      string
	Token   string // the bearer token sent to the gateway's /bo API
	Name    string
	Role    Role
	Expires time.Time
	// IDToken is the OpenID provider's, for signing out there too; empty
	// after a sign-in with a token.
	IDToken string
}

// CanEdit reports whether the person may change anything.
func (s Session) CanEdit() bool { return s.Role == Editor }

// Store keeps live sessions.
type Store struct {
	mu   sync.Mutex
	byID map[string]Session
	ttl  time.Duration
	now  func() time.Time
}

// NewStore returns a store whose sessions last ttl from sign-in.
func NewStore(ttl time.Duration) *Store {
	return &Store{byID: map[string]Session{}, ttl: ttl, now: time.Now}
}

// Create starts a session for the person token names.
func (st *Store) Create(token, name string, role Role) Session {
	return st.Add(Session{Token: token, Name: name, Role: role})
}

// Add starts session s under a new id. It lasts the store's ttl, or until
// s.Expires when that comes first (an access token that expires sooner:
// the session must not outlive the token it sends).
func (st *Store) Add(s Session) Session {
	s.ID = newID()
	if limit := st.now().Add(st.ttl); s.Expires.IsZero() || s.Expires.After(limit) {
		s.Expires = limit
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.sweep()
	st.byID[s.ID] = s
	return s
}

// Get returns the live session id names; an unknown id (another
// deployment's cookie, a signed-out or expired session) is not found.
func (st *Store) Get(id string) (Session, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.byID[id]
	if !ok {
		return Session{}, false
	}
	if !st.now().Before(s.Expires) {
		delete(st.byID, id)
		return Session{}, false
	}
	return s, true
}

// Delete ends the session: its cookie no longer signs anyone in.
func (st *Store) Delete(id string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.byID, id)
}

// EndToken ends every session that sends token: the API refused it
// (revoked, or expired sooner than said).
func (st *Store) EndToken(token string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for id, s := range st.byID {
		if s.Token == token {
			delete(st.byID, id)
		}
	}
}

// sweep drops expired sessions; called with mu held, at each sign-in, so
// the map holds at most the sessions of one ttl.
func (st *Store) sweep() {
	now := st.now()
	for id, s := range st.byID {
		if !now.Before(s.Expires) {
			delete(st.byID, id)
		}
	}
}

// newID is 256 random bits, URL-safe.
func newID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TTL is how long a session lasts.
func (st *Store) TTL() time.Duration { return st.ttl }
