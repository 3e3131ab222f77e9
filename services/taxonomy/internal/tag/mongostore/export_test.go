package mongostore

import "time"

// SetClock makes the store read the time from now (tests of key expiry).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// SetCollided makes the store run f when a keyed insert met a unique
// index, before it looks the key's holder up.
func (s *Store) SetCollided(f func()) { s.collided = f }
