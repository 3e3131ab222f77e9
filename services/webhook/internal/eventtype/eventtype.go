// Package eventtype owns the event types a webhook subscription can ask
// for: their public names (document.deleted, ...) and the JetStream
// subject each comes from (the vocabulary of libs/events), and how a
// subscription's pattern (an exact name, a prefix such as document.*, or *
// for all) matches them. Adding an event
// the services publish is one row in libs/events' types.
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
type Type = events.Type

// table lists every type: the whole vocabulary of libs/events.
var table = events.Types()

// All returns every type, sorted by name.
func All() []Type {
	out := append([]Type(nil), table...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Subjects returns the JetStream subjects of every type.
func Subjects() []string { return events.TypeSubjects() }

// FromSubject returns the public name of the events published on subject.
func FromSubject(subject string) (string, bool) {
	t, ok := events.TypeOf(subject)
	return t.Name, ok
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
