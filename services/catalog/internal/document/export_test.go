package document

import "time"

// Failing is failing for the package's external tests.
var Failing = failing

// WithoutRevisions makes s keep no revision: the baseline of the
// benchmark of a PATCH with revisions.
func WithoutRevisions(s *Service) { s.noRevisions = true }

// SetClock makes s read the time from now (a replica whose clock is off).
func SetClock(s *Service, now func() time.Time) { s.now = now }
