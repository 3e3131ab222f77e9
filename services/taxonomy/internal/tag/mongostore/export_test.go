package mongostore

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"
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

// Collections returns the categories and tags collections, for a test to
// store records as an earlier version did.
func Collections(s *Store) (categories, tags *mongo.Collection) { return s.categories, s.tags }
