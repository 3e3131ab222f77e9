// Package events defines the deletion events the bounded contexts of the
// document library exchange over NATS JetStream (CONTRACT.md §6): subjects,
// payloads and the CloudEvents 1.0 JSON envelope.
package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// Stream is the JetStream stream that captures every subject below.
const (
	Stream         = "LIBRARY"
	StreamSubjects = "library.>"
)

// Subjects, one per event type; the CloudEvents type equals the subject.
const (
	TagDeleted      = "library.taxonomy.tag.deleted"
	CategoryDeleted = "library.taxonomy.category.deleted"
	MediaDeleted    = "library.media.deleted"
	DocumentDeleted = "library.catalog.document.deleted"
)

// Payloads.
type (
	TagDeletedData struct {
		TagID      string `json:"tagId"`
		CategoryID string `json:"categoryId"`
	}
	CategoryDeletedData struct {
		CategoryID string   `json:"categoryId"`
		TagsIDs    []string `json:"tagsIds"`
	}
	MediaDeletedData struct {
		MediaID string `json:"mediaId"`
	}
	DocumentDeletedData struct {
		DocumentID string `json:"documentId"`
	}
)

// Envelope is a CloudEvents 1.0 event in its JSON form.
type Envelope struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

// Event is an envelope ready to publish, with the W3C trace context of the
// request that caused it.
type Event struct {
	Envelope
	TraceParent string
	TraceState  string
}

// New builds an event of the given subject from source (e.g. "/taxonomy")
// with a fresh unique id, capturing the trace context of ctx.
func New(ctx context.Context, source, subject string, data any, at time.Time) (Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("event %s: %w", subject, err)
	}
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	return Event{
		Envelope: Envelope{
			SpecVersion: "1.0", ID: NewID(), Source: source, Type: subject,
			Time: at.UTC(), DataContentType: "application/json", Data: raw,
		},
		TraceParent: carrier["traceparent"],
		TraceState:  carrier["tracestate"],
	}, nil
}

// NewID returns a random 128-bit event id in hex: safe as a NATS message id
// and as a document key.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
