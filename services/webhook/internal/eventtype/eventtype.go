// Package eventtype owns the event types a webhook subscription can ask
// for: their public names (document.deleted, ...), the JetStream subject
// each comes from, and how a subscription's pattern (an exact name, a
// prefix such as document.*, or * for all) matches them. Adding an event
// the services publish is one row in table.
package eventtype

import (
	"sort"
	"strings"

	"github.com/doclib/libs/events"
)

// Ping is the type of a test delivery; nobody subscribes to it, every
// subscription receives it when asked.
const Ping = "webhook.ping"

// Type is one event type a subscription can ask for.
type Type struct {
	Name        string `json:"name"`
	Subject     string `json:"-"`
	Description string `json:"description"`
}

// table lists every type.
var table = []Type{
	{"document.deleted", events.DocumentDeleted, "A document was moved to the trash."},
	{"document.purged", events.DocumentPurged, "A document deleted longer ago than the trash retention is gone for good."},
	{"document.published", events.DocumentPublished, "A draft, or a document's pending changes, became what the app sees."},
	{"document.unpublished", events.DocumentUnpublished, "A published document went back to draft: the app no longer sees it."},
	{"tag.deleted", events.TagDeleted, "A tag was deleted."},
	{"category.deleted", events.CategoryDeleted, "A tag category was deleted, with its tags."},
	{"media.deleted", events.MediaDeleted, "A media file was deleted."},
}

// All returns every type, sorted by name.
func All() []Type {
	out := append([]Type(nil), table...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Subjects returns the JetStream subjects of every type.
func Subjects() []string {
	out := make([]string, len(table))
	for i, t := range table {
		out[i] = t.Subject
	}
	return out
}

// FromSubject returns the public name of the events published on subject.
func FromSubject(subject string) (string, bool) {
	for _, t := range table {
		if t.Subject == subject {
			return t.Name, true
		}
	}
	return "", false
}

// ValidPattern reports whether p names at least one type: an exact name,
// "*", or a prefix ending in ".*" that some name starts with.
func ValidPattern(p string) bool {
	for _, t := range table {
		if Match(p, t.Name) {
			return true
		}
	}
	return false
}

// Match reports whether pattern p asks for events of type name.
func Match(p, name string) bool {
	if p == "*" || p == name {
		return true
	}
	prefix, ok := strings.CutSuffix(p, "*")
	return ok && strings.HasSuffix(prefix, ".") && strings.HasPrefix(name, prefix)
}
