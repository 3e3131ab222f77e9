package outbox

import "github.com/doclib/libs/metrics"

// The backlog as the relay saw it at its last pass, per collection. Every
// replica's relay reports the same collections: aggregate with max (count)
// and min (timestamp). A pass reads at most BatchSize documents, so with a
// larger backlog the count is a lower bound and the oldest entry is the
// oldest of those read.
var (
	pendingEvents = metrics.Gauges("doclib_outbox_pending_events",
		"Outbox entries not yet acknowledged by the stream, as the relay's last pass found them (at most its batch of documents).",
		"collection")
	oldestPending = metrics.Gauges("doclib_outbox_oldest_pending_event_timestamp_seconds",
		"Unix time at which the oldest pending outbox entry was recorded; 0 when there is none. Its age is time() minus it.",
		"collection")
)

// observe records the batch a pass of an Outbox read in coll.
func observe(coll string, recs []record) {
	pendingEvents.WithLabelValues(coll).Set(float64(len(recs)))
	ts := 0.0
	if len(recs) > 0 {
		ts = float64(recs[0].CreatedAt.UnixMilli()) / 1000
	}
	oldestPending.WithLabelValues(coll).Set(ts)
}
