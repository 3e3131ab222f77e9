// Package outbox keeps events that must be published in the same document
// as the change that caused them, so one single-document write records both
// (no multi-document transaction is needed, FerretDB has none). A relay
// (Relay) publishes them later and removes them, one conditional update per
// entry, so several relays may run side by side.
//
// A document with pending events carries:
//
//	outbox:      { "<event id>": {subject, envelope, traceparent, tracestate, createdAt}, ... }
//	outboxCount: number of entries in outbox (indexed, so the relay finds them cheaply)
package outbox

import (
	"encoding/json"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/doclib/libs/events"
)

// Field names in the owning document.
const (
	Field      = "outbox"
	CountField = "outboxCount"
)

// Entry is one pending event as stored.
type Entry struct {
	Subject     string    `bson:"subject"`
	Envelope    string    `bson:"envelope"` // the exact JSON bytes to publish
	TraceParent string    `bson:"traceparent,omitempty"`
	TraceState  string    `bson:"tracestate,omitempty"`
	CreatedAt   time.Time `bson:"createdAt"`
}

// Add merges the events into update, a MongoDB update document with
// operators ($set, $inc, ...), so the same write that makes the change
// records them.
func Add(update bson.M, evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	set, _ := update["$set"].(bson.M)
	if set == nil {
		set = bson.M{}
	}
	for _, ev := range evs {
		env, err := json.Marshal(ev.Envelope)
		if err != nil {
			return fmt.Errorf("outbox: %w", err)
		}
		set[Field+"."+ev.ID] = Entry{
			Subject: ev.Type, Envelope: string(env),
			TraceParent: ev.TraceParent, TraceState: ev.TraceState, CreatedAt: ev.Time,
		}
	}
	update["$set"] = set
	inc, _ := update["$inc"].(bson.M)
	if inc == nil {
		inc = bson.M{}
	}
	inc[CountField] = len(evs)
	update["$inc"] = inc
	return nil
}
