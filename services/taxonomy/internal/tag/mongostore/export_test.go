package mongostore

import (
	"context"
	"testing"
)

// OutboxLen counts the events recorded and not yet published.
func OutboxLen(t *testing.T, s *Store) int64 {
	t.Helper()
	n, err := s.outbox.Collection().CountDocuments(context.Background(), struct{}{})
	if err != nil {
		t.Fatalf("count outbox: %v", err)
	}
	return n
}
