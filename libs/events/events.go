// Package events owns how the bounded contexts of the document library
// exchange events over NATS JetStream (CONTRACT.md §6): the vocabulary of
// every change (subjects, payloads, public names: types.go), the CloudEvents 1.0 JSON envelope, the connection and streams,
// the Publisher the outbox relay uses and the Consumer that runs handlers.
//
// # Streams
//
// EnsureStream creates or updates two streams, idempotently:
//
//   - LIBRARY captures library.>. Retention is Limits, not WorkQueue or
//     Interest: several services consume it independently, and a message
//     must stay readable after it was acked or terminated (for replays and
//     for dead-letter investigations). MaxAge is 14 days, long enough to
//     replay after a consumer outage of a long weekend and more. File
//     storage, so events survive a server restart. The duplicate window is
//     1 hour: every publish carries the event id as Nats-Msg-Id, and the
//     window must cover the relay's republish horizon, the time between a
//     publish that reached the stream and a republish of the same entry
//     (the relay crashed or lost Mongo before it removed the entry, two
//     relay replicas raced, a publish buffered during a disconnect was
//     flushed after the relay retried it). The default of 2 minutes is
//     shorter than a Mongo outage; an hour is not.
//   - LIBRARY_DLQ captures dlq.>, one subject per consumer
//     (dlq.<consumer name>), for the messages a Consumer gave up on. MaxAge
//     is 30 days so an operator has time to look; a dead-letter move has
//     its own message id, so a retried move is deduplicated too.
//
// # Delivery
//
// Delivery is at least once. The stream drops a republish of the same event
// id within the window, but a consumer may still see an event twice (a
// redelivery after an ack was lost, an ack wait that expired while the
// handler was still running, a republish after the window): handlers must
// be idempotent. The Consumer does not deduplicate.
//
// The W3C trace context travels in the lower-case traceparent and tracestate
// headers (see HeaderCarrier).
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
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// Stream is the JetStream stream that captures every subject below;
// DLQStream keeps the messages consumers gave up on, under
// DLQSubjectPrefix + consumer name.
const (
	Stream           = "LIBRARY"
	StreamSubjects   = "library.>"
	DLQStream        = "LIBRARY_DLQ"
	DLQSubjects      = "dlq.>"
	DLQSubjectPrefix = "dlq."
)

// Subjects, one per event type; the CloudEvents type equals the subject.
const (
	TagCreated      = "library.taxonomy.tag.created"
	TagRenamed      = "library.taxonomy.tag.renamed"
	TagDeleted      = "library.taxonomy.tag.deleted"
	CategoryCreated = "library.taxonomy.category.created"
	CategoryRenamed = "library.taxonomy.category.renamed"
	CategoryDeleted = "library.taxonomy.category.deleted"
	// The public configuration (GET /public/config) was set.
	ConfigChanged   = "library.taxonomy.config.changed"
	MediaUploaded   = "library.media.uploaded"
	MediaDeleted    = "library.media.deleted"
	DocumentDeleted = "library.catalog.document.deleted"
	DocumentPurged  = "library.catalog.document.purged"
	// A draft made public, or pending changes made live; and a published
	// document taken back to draft (the editorial workflow).
	DocumentPublished   = "library.catalog.document.published"
	DocumentUnpublished = "library.catalog.document.unpublished"
	// Every other change of a document: created (as a draft or published),
	// its live version edited, a draft or pending changes saved, a
	// publication or unpublication scheduled or unscheduled, restored from
	// the trash (or an import or a revision's restore).
	DocumentCreated    = "library.catalog.document.created"
	DocumentUpdated    = "library.catalog.document.updated"
	DocumentDraftSaved = "library.catalog.document.draft_saved"
	DocumentScheduled  = "library.catalog.document.scheduled"
	DocumentRestored   = "library.catalog.document.restored"
)

// Payloads. Every payload names the records it is about by id and, where
// a person made the change, the subject of their identity (Actor, "" for
// the services' own jobs); the time is the envelope's. Fields are only ever
// added, so a consumer written for an older payload keeps working.
type (
	// TagData: a tag created (in its category) or renamed (Name is the
	// new name).
	TagData struct {
		TagID      string `json:"tagId"`
		CategoryID string `json:"categoryId"`
		Name       string `json:"name"`
		Actor      string `json:"actor,omitempty"`
	}
	TagDeletedData struct {
		TagID      string `json:"tagId"`
		CategoryID string `json:"categoryId"`
		Actor      string `json:"actor,omitempty"`
	}
	// CategoryData: a tag category created (with no tags) or renamed.
	CategoryData struct {
		CategoryID string `json:"categoryId"`
		Name       string `json:"name"`
		Actor      string `json:"actor,omitempty"`
	}
	// CategoryDeletedData: the category and its tags (TagsIDs), each of
	// which has its own tag event too.
	CategoryDeletedData struct {
		CategoryID string   `json:"categoryId"`
		TagsIDs    []string `json:"tagsIds"`
		Actor      string   `json:"actor,omitempty"`
	}
	// ConfigChangedData: the public configuration as it is now.
	ConfigChangedData struct {
		ModeratorEmail string `json:"moderatorEmail"`
		Actor          string `json:"actor,omitempty"`
	}
	// MediaUploadedData: a media file stored (uploaded or imported). A
	// media is never changed after; it is public once a public document
	// refers to it.
	MediaUploadedData struct {
		MediaID  string `json:"mediaId"`
		Name     string `json:"name"`
		MimeType string `json:"mimeType"`
		Size     int64  `json:"size"`
		SHA256   string `json:"sha256"`
		Actor    string `json:"actor,omitempty"`
	}
	MediaDeletedData struct {
		MediaID string `json:"mediaId"`
		Actor   string `json:"actor,omitempty"`
	}
	// DocumentDeletedData: WasPublic says the app could see the document
	// until this deletion (the live stream tells the app of it only then).
	DocumentDeletedData struct {
		DocumentID string `json:"documentId"`
		Seq        int64  `json:"seq,omitempty"`
		Actor      string `json:"actor,omitempty"`
		WasPublic  bool   `json:"wasPublic,omitempty"`
	}
	// DocumentPurgedData: a document deleted longer ago than the trash
	// retention is gone for good.
	DocumentPurgedData struct {
		DocumentID string `json:"documentId"`
		Seq        int64  `json:"seq,omitempty"`
	}
	// DocumentPublishedData: version is the document's version after the
	// publication (its revision); Public its public detail, as in
	// DocumentData.
	DocumentPublishedData struct {
		DocumentID string          `json:"documentId"`
		Version    int64           `json:"version"`
		Seq        int64           `json:"seq,omitempty"`
		Actor      string          `json:"actor,omitempty"`
		Public     json.RawMessage `json:"public,omitempty"`
	}
	DocumentUnpublishedData struct {
		DocumentID string `json:"documentId"`
		Version    int64  `json:"version"`
		Seq        int64  `json:"seq,omitempty"`
		Actor      string `json:"actor,omitempty"`
	}
)

// DocumentData is the payload of every document event but deleted, purged,
// published and unpublished, whose payloads above it extends field for
// field. Seq is the change-sequence number the change committed with (the
// order /public/sync and /bo/changes follow); Actor the subject of the
// identity that made it ("" for the service's own jobs: a schedule due, a
// deletion consumer); Public the document's public detail
// (GET /public/documents/:id/detail) when the change left it public,
// absent otherwise. A detail larger than MaxPublicDetail is sent without
// its content (PublicPartial): an event stays far below what NATS carries,
// and the reader gets the rest from the detail route.
type DocumentData struct {
	DocumentID    string          `json:"documentId"`
	Version       int64           `json:"version"`
	Seq           int64           `json:"seq"`
	Actor         string          `json:"actor,omitempty"`
	Public        json.RawMessage `json:"public,omitempty"`
	PublicPartial bool            `json:"publicPartial,omitempty"`
}

// MaxPublicDetail bounds the public detail an event carries whole (NATS
// refuses a message over its max_payload, 1 MiB by default).
const MaxPublicDetail = 256 << 10

// Envelope is a CloudEvents 1.0 event in its JSON form.
type Envelope struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
	// Sequence is the LIBRARY stream's sequence of the message, set by the
	// Consumer (not part of the wire form): the one order every event
	// shares, which a consumer keeping events in order sorts by.
	Sequence uint64 `json:"-"`
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
	id := NewID()
	// The message is created here, in the request, and sent later by the
	// relay: a "create" span under the request's span (OpenTelemetry's
	// messaging conventions for a deferred send) is what the consumers'
	// spans hang from, so one trace goes from the request through NATS to
	// the consumer. It uses the request span's provider: with no span
	// exported, it is a no-op that passes the request's context on.
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(instrumentation).Start(ctx, "create "+subject,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(messagingSystem, semconv.MessagingOperationTypeCreate, semconv.MessagingOperationName("create"),
			semconv.MessagingDestinationName(subject), semconv.MessagingMessageID(id)))
	span.End()
	carrier := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, carrier)
	return Event{
		Envelope: Envelope{
			SpecVersion: "1.0", ID: id, Source: source, Type: subject,
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
