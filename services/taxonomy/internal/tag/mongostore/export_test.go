package mongostore

import "time"

// SetClock makes the store read the time from now (tests of key expiry).
func (s *Store) SetClock(now func() time.Time) { s.now = now }
