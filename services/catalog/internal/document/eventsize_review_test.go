package document_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/outbox"
	"github.com/doclib/libs/testkit"
	"github.com/doclib/services/catalog/internal/document"
)

// A document's events carry its public detail, content included, and a
// document may hold document.MaxContent bytes of content: its event is
// then larger than NATS's max_payload (1 MB by default) and is refused at
// every try. The relay stops at the first failure, so every event after
// it waits behind it for good: one large valid document stops the
// catalog's events (tag deletions reaching the public side, webhooks).
func TestALargeDocumentDoesNotStopTheCatalogsEvents(t *testing.T) {
	svc, store := newService(t, newWorld())
	ctx := context.Background()
	// The public detail as httpapi.PublicDetail renders it: the content
	// is in it, JSON-escaped.
	store.RenderPublic(func(d document.Document) json.RawMessage {
		raw, _ := json.Marshal(map[string]any{"id": d.ID, "title": d.Title, "type": d.Type, "content": d.Content})
		return raw
	})
	ns := testkit.NATS(t)
	nc, js, err := events.Connect(ctx, ns.ClientURL(), "review-test", testkit.Logger(t))
	testkit.Must(t, err, "connect")
	t.Cleanup(nc.Close)
	testkit.Must(t, events.EnsureStream(ctx, js), "ensure stream")

	big := strings.Repeat("a \"quoted\" line\n", document.MaxContent/16)
	_, err = svc.Create(ctx, document.Input{Type: "MARKDOWN", Title: "big", Content: big})
	testkit.Must(t, err, "Create a document of the largest content")
	_, err = svc.Create(ctx, document.Input{Type: "LINK", Title: "small", URL: "https://x.org"})
	testkit.Must(t, err, "Create a small document")

	stop := store.Outbox().Start(events.NewPublisher(js, testkit.Logger(t)), outbox.RelayConfig{Interval: 50 * time.Millisecond})
	defer stop()
	deadline := time.Now().Add(5 * time.Second)
	var left int64
	for time.Now().Before(deadline) {
		left, _ = store.Outbox().Collection().CountDocuments(ctx, bson.M{"subject": events.DocumentCreated})
		if left == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("%d created events still in the outbox after 5 s: the large document's event blocks every later one", left)
}
