// Package session owns the console's sign-in sessions: the person's
// bearer token, name, role and expiry, sealed (AES-256-GCM) into the
// HttpOnly cookie itself, so that every replica sharing the key opens
// every session and a restart keeps them. Nothing is kept on the server
// but the sessions signed out here, so that their cookie no longer signs
// anyone in on this replica until it expires.
//
// Why sealed cookies rather than a table in the database: the console
// keeps no data of its own (every page calls the API), a session is read
// on every page and would cost a database round trip there, and a sealed
// value needs nothing but a key from a Secret. What that gives up: a
// signed-out cookie copied beforehand still opens on another replica until
// its expiry (at most the session's ttl, 8 hours by default), as a
// revocation list would have to be shared; the browser's own cookie is
// cleared at sign-out, and the API still refuses a token revoked there.
package session

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
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
	// ID is the sealed session: the cookie's value.
	ID      string    `json:"-"`
	Token   string    `json:"t"` // the bearer token sent to the gateway's /bo API
	Name    string    `json:"n"`
	Role    Role      `json:"r"`
	Expires time.Time `json:"e"`
	// IDToken is the OpenID provider's, for signing out there too; empty
	// after a sign-in with a token, or when it would make the cookie too
	// large for browsers.
	IDToken string `json:"i,omitempty"`
	// Nonce makes two sessions of the same person differ.
	Nonce string `json:"x"`
}

// CanEdit reports whether the person may change anything.
func (s Session) CanEdit() bool { return s.Role == Editor }

// maxCookie is the largest sealed value kept whole; past it the ID token
// is left out (browsers keep cookies of about 4 KB).
const maxCookie = 3800

// MinKeyLength is the shortest key NewSealedStore accepts, in bytes.
const MinKeyLength = 32

// ErrShortKey is a key under MinKeyLength bytes.
var ErrShortKey = errors.New("the session key must be at least 32 bytes")

// Store seals and opens sessions.
type Store struct {
	aead cipher.AEAD
	ttl  time.Duration
	now  func() time.Time

	mu    sync.Mutex
	ended map[[32]byte]time.Time // sealed values and tokens ended here, until they expire
}

// sealContext binds a sealed value to its use.
var sealContext = []byte("doclib console session")

// NewSealedStore returns a store whose sessions last ttl from sign-in,
// sealed with a key derived from key (CONSOLE_SESSION_KEY): every store
// with the same key opens them.
func NewSealedStore(key []byte, ttl time.Duration) (*Store, error) {
	if len(key) < MinKeyLength {
		return nil, ErrShortKey
	}
	sum := sha256.Sum256(append([]byte("doclib console session key\x00"), key...))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Store{aead: aead, ttl: ttl, now: time.Now, ended: map[[32]byte]time.Time{}}, nil
}

// NewStore returns a store with a key of its own, made now: only this
// process opens its sessions (tests, and a console started without
// CONSOLE_SESSION_KEY).
func NewStore(ttl time.Duration) *Store {
	key := make([]byte, MinKeyLength)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	st, err := NewSealedStore(key, ttl)
	if err != nil {
		panic(err) // a 32-byte key always makes a store
	}
	return st
}

// Create starts a session for the person token names.
func (st *Store) Create(token, name string, role Role) Session {
	return st.Add(Session{Token: token, Name: name, Role: role})
}

// Add seals session s; its ID is the cookie's value. It lasts the store's
// ttl, or until s.Expires when that comes first (an access token that
// expires sooner: the session must not outlive the token it sends).
func (st *Store) Add(s Session) Session {
	if limit := st.now().Add(st.ttl); s.Expires.IsZero() || s.Expires.After(limit) {
		s.Expires = limit
	}
	s.Nonce = random(12)
	s.ID = st.seal(s)
	if len(s.ID) > maxCookie && s.IDToken != "" {
		s.IDToken = ""
		s.ID = st.seal(s)
	}
	return s
}

func (st *Store) seal(s Session) string {
	plain, _ := json.Marshal(s) // a Session always encodes
	nonce := make([]byte, st.aead.NonceSize())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(st.aead.Seal(nonce, nonce, plain, sealContext))
}

// Get opens the session id seals; another key's cookie, a changed one, a
// signed-out or expired session is not found.
func (st *Store) Get(id string) (Session, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(id)
	n := st.aead.NonceSize()
	if err != nil || len(raw) < n {
		return Session{}, false
	}
	plain, err := st.aead.Open(nil, raw[:n], raw[n:], sealContext)
	var s Session
	if err != nil || json.Unmarshal(plain, &s) != nil || !st.now().Before(s.Expires) {
		return Session{}, false
	}
	s.ID = id
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.isEnded(id) || st.isEnded("token\x00"+s.Token) {
		return Session{}, false
	}
	return s, true
}

// Delete ends the session id seals on this replica (sign-out; the browser
// drops its cookie too).
func (st *Store) Delete(id string) {
	if s, ok := st.Get(id); ok {
		st.end(id, s.Expires)
	}
}

// EndToken ends every session that sends token on this replica: the API
// refused it (revoked, or expired sooner than said).
func (st *Store) EndToken(token string) {
	st.end("token\x00"+token, st.now().Add(st.ttl))
}

func (st *Store) end(what string, until time.Time) {
	st.mu.Lock()
	defer st.mu.Unlock()
	now := st.now()
	for k, exp := range st.ended { // at most the sessions ended within one ttl
		if !now.Before(exp) {
			delete(st.ended, k)
		}
	}
	st.ended[sha256.Sum256([]byte(what))] = until
}

func (st *Store) isEnded(what string) bool {
	_, ok := st.ended[sha256.Sum256([]byte(what))]
	return ok
}

// random is n random bytes, URL-safe.
func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// TTL is how long a session lasts.
func (st *Store) TTL() time.Duration { return st.ttl }
