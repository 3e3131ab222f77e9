package delivery

import "github.com/doclib/libs/metrics"

var (
	attemptsTotal = metrics.Counters("doclib_webhook_delivery_attempts_total",
		"Webhook delivery attempts, by subscription and outcome (success, failure, gone).", "subscription", "outcome")
	attemptDuration = metrics.Histograms("doclib_webhook_delivery_duration_seconds",
		"Duration of one webhook delivery attempt, by subscription.",
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "subscription")
	deliveryLag = metrics.Histograms("doclib_webhook_delivery_lag_seconds",
		"From an event's publication to its successful delivery, by subscription.",
		[]float64{.01, .025, .05, .1, .25, .5, 1, 5, 30, 300, 3600}, "subscription")
	backlog = metrics.Gauges("doclib_webhook_backlog",
		"Deliveries waiting in a subscription's queue, as its worker last counted them.", "subscription")
	disabledTotal = metrics.Counters("doclib_webhook_subscriptions_disabled_total",
		"Subscriptions the delivery disabled (410 Gone or the retry window passed).")
)

// forget removes the series of a subscription whose worker stopped.
func forget(sub string) {
	backlog.DeleteLabelValues(sub)
}
