package document

// Failing is failing for the package's external tests.
var Failing = failing

// WithoutRevisions makes s keep no revision: the baseline of the
// benchmark of a PATCH with revisions.
func WithoutRevisions(s *Service) { s.noRevisions = true }
