// Package notifier holds the adapters of the notify.Sender port: the log
// outbox (the default: it sends nothing and logs what it would send),
// Twilio Programmable Messaging (SMS, and WhatsApp through Twilio) and the
// WhatsApp Business Cloud API. Each is one POST over plain net/http and
// one signature check on its callbacks; the provider's base URL is
// configurable, so tests (test/fakeprovider) and proxies stand in for it.
package notifier

import (
	"net/http"
	"strconv"
	"time"

	"github.com/qms-dev/qms/core/notify"
)

// Timeout bounds one request to a provider.
const Timeout = 10 * time.Second

// classify is what every provider's HTTP status says when its body says
// nothing more precise: 429 and 5xx are retried (with the provider's
// Retry-After when it gave one), the rest refused for good.
func classify(resp *http.Response, se *notify.SendError) *notify.SendError {
	se.HTTPStatus = resp.StatusCode
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		se.Retryable = true
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			se.RetryAfter = time.Duration(s) * time.Second
		}
	}
	if se.Code == "" {
		se.Code = notify.ErrRejected
	}
	return se
}

// unreachable is a request that never got an answer: retried.
func unreachable(err error) *notify.SendError {
	return &notify.SendError{Code: notify.ErrRejected, Message: err.Error(), Retryable: true}
}
