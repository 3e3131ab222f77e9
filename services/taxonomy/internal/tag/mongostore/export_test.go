package mongostore

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/doclib/libs/events"
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

// Pending returns the events recorded and not yet published, in order.
func Pending(t *testing.T, s *Store) []events.Envelope {
	t.Helper()
	evs, err := s.outbox.Pending(context.Background())
	if err != nil {
		t.Fatalf("read outbox: %v", err)
	}
	return evs
}
