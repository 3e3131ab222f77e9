package changes

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/doclib/libs/events"
	"github.com/doclib/libs/httpx"
)

// Message is one message of a stream: the JetStream stream sequence as its
// id, the event type's public name (events.Type) as its event, and Data as
// its JSON data.
type Message struct {
	ID    uint64
	Event string
	Data  Data
}

// Data says what changed. Sync tells the app to call /public/sync with the
// cursor it holds (its own: the cursor encodes what the client holds, so
// the stream cannot know it); FromScratch, on a reset, to drop the cursor
// and sync from the start, as after a 410 from /public/sync.
type Data struct {
	Type    string `json:"type"`
	EventID string `json:"eventId,omitempty"`
	Time    string `json:"time,omitempty"` // RFC 3339, UTC, milliseconds

	Payload     json.RawMessage `json:"data,omitempty"`
	Sync        bool            `json:"sync"`
	FromScratch bool            `json:"fromScratch,omitempty"`
	Detail      string          `json:"detail,omitempty"`
}

// Reset is the event of a resume from before what the stream keeps (or
// after it: a stream made anew): the client cannot be told what it missed.
const Reset = "reset"

func resetMessage(id uint64) Message {
	return Message{ID: id, Event: Reset, Data: Data{Type: Reset, Sync: true, FromScratch: true,
		Detail: "the changes since Last-Event-ID are no longer kept: sync from scratch (/public/sync without a cursor), then follow this stream"}}
}

// frame is m in the text/event-stream format. Data is one line of JSON
// (encoding/json escapes line breaks in strings).
func (m Message) frame() ([]byte, error) {
	data, err := json.Marshal(m.Data)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(m.Event) + 32)
	b.WriteString("id: ")
	b.WriteString(strconv.FormatUint(m.ID, 10))
	b.WriteString("\nevent: ")
	b.WriteString(m.Event)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes(), nil
}

// Audience is who a stream is for: what it lets through and how.
type Audience int

const (
	// Public is the app: only what is public, without who made it.
	Public Audience = iota
	// BackOffice is an authenticated viewer or editor: every change.
	BackOffice
)

// publicTypes are the types /public/changes may carry; the others (a
// draft saved, a purge of a document already gone from the app, media
// files, public only through the documents that show them) never reach
// it.
var publicTypes = map[string]bool{
	events.DocumentCreated: true, events.DocumentUpdated: true, events.DocumentScheduled: true,
	events.DocumentPublished: true, events.DocumentUnpublished: true, events.DocumentDeleted: true,
	events.DocumentRestored: true,
	events.TagCreated:       true, events.TagRenamed: true, events.TagDeleted: true,
	events.CategoryCreated: true, events.CategoryRenamed: true, events.CategoryDeleted: true,
	events.ConfigChanged: true,
}

// Subjects are the JetStream subjects a stream for a reads.
func (a Audience) Subjects() []string {
	if a == BackOffice {
		return events.TypeSubjects()
	}
	var out []string
	for _, s := range events.TypeSubjects() {
		if publicTypes[s] {
			out = append(out, s)
		}
	}
	return out
}

// documentFields are the fields of a document payload that decide whether
// the app may see it.
type documentFields struct {
	Public    json.RawMessage `json:"public"`
	WasPublic bool            `json:"wasPublic"`
}

// visible reports whether the app may see the event e of subject: a
// document event only when it carries the document's public shape, or is
// the unpublication or deletion of a public document; every taxonomy and
// configuration change.
func visible(subject string, data json.RawMessage) bool {
	if !publicTypes[subject] {
		return false
	}
	t, _ := events.TypeOf(subject)
	if len(t.Name) < 9 || t.Name[:9] != "document." {
		return true
	}
	var d documentFields
	if err := json.Unmarshal(data, &d); err != nil {
		return false
	}
	switch subject {
	case events.DocumentUnpublished:
		return true
	case events.DocumentDeleted:
		return d.WasPublic
	}
	return len(d.Public) > 0 && string(d.Public) != "null"
}

// privateFields are left out of what the app is sent: who made a change
// is the back-office's business.
var privateFields = []string{"actor", "wasPublic"}

// Of returns the message of e, read at stream sequence seq, for audience
// a; ok false when a must not see it.
func (a Audience) Of(seq uint64, e events.Envelope) (m Message, ok bool) {
	t, known := events.TypeOf(e.Type)
	if !known {
		return Message{}, false
	}
	payload := e.Data
	if a == Public {
		if !visible(e.Type, e.Data) {
			return Message{}, false
		}
		payload = withoutFields(e.Data, privateFields...)
		if payload == nil {
			return Message{}, false
		}
	}
	return Message{ID: seq, Event: t.Name, Data: Data{Type: t.Name, EventID: e.ID, Time: httpx.FormatTime(e.Time), Payload: payload, Sync: true}}, true
}

// withoutFields returns the JSON object raw without the members named;
// nil when raw is not an object.
func withoutFields(raw json.RawMessage, names ...string) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil
	}
	for _, n := range names {
		delete(m, n)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}
