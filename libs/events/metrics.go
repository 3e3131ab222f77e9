package events

import "github.com/doclib/libs/metrics"

// The events' counters, per subject (publishing) and per durable consumer.
var (
	publishedTotal = metrics.Counters("doclib_events_published_total",
		"Events the stream stored (a republish it dropped as a duplicate is not counted).", "subject")
	publishErrorsTotal = metrics.Counters("doclib_events_publish_errors_total",
		"Publish attempts that failed (NATS unreachable or not acknowledging); the outbox retries them.", "subject")
	appliedTotal = metrics.Counters("doclib_events_applied_total",
		"Events a consumer applied and acknowledged.", "consumer")
	retriedTotal = metrics.Counters("doclib_events_retried_total",
		`Deliveries a consumer failed and asked again for later; reason "unavailable": a dependency was down (never dead-lettered), "failed": counts towards dead-letter.`,
		"consumer", "reason")
	deadLetteredTotal = metrics.Counters("doclib_events_dead_lettered_total",
		"Events a consumer gave up on and copied to dlq.<consumer> (stream LIBRARY_DLQ).", "consumer")
)

// Retry reasons.
const (
	retryUnavailable = "unavailable"
	retryFailed      = "failed"
)

// consumerMetrics makes a consumer's series exist at 0 from its start, so
// that rate() and increase() see its first event.
func consumerMetrics(name string) {
	appliedTotal.WithLabelValues(name)
	retriedTotal.WithLabelValues(name, retryUnavailable)
	retriedTotal.WithLabelValues(name, retryFailed)
	deadLetteredTotal.WithLabelValues(name)
}
