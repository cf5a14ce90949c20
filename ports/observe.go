package ports

import "time"

// DeliveryObserver hears how webhook delivery attempts end, for the
// metrics qms_webhook_deliveries_total and qms_webhook_delivery_lag_seconds.
// The metrics module provides it (adapters/metrics.Metrics); the webhook
// delivery worker calls it once per attempt, with an fx `optional:"true"`
// dependency so that it runs without metrics too.
type DeliveryObserver interface {
	// DeliveryFinished records one attempt: outcome is "succeeded",
	// "failed" (will be retried) or "discarded" (no attempt left); lag is
	// the time from the event's occurrence to the end of the attempt.
	DeliveryFinished(outcome string, lag time.Duration)
}
