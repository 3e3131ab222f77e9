package events

import (
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"
)

// HeaderCarrier lets OpenTelemetry propagators read and write the trace
// context in NATS message headers. nats.Header is case-sensitive, and
// propagation.HeaderCarrier over http.Header would canonicalise the keys to
// "Traceparent", which case-sensitive readers in other languages do not
// find. This carrier keeps keys exactly as the propagator writes them
// (lower-case "traceparent", "tracestate").
type HeaderCarrier nats.Header

var _ propagation.TextMapCarrier = HeaderCarrier(nil)

// Get returns the first value of key; a header written by a producer that
// canonicalised its keys is found too.
func (c HeaderCarrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range c {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set replaces the values of key, keeping its case.
func (c HeaderCarrier) Set(key, value string) {
	c[key] = []string{value}
}

// Keys lists the header names.
func (c HeaderCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
