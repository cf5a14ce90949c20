package webhooks

import (
	"math/rand/v2"
	"time"
)

// Schedule is the published retry schedule (docs/webhooks.md): the delay
// before attempt 2, 3, ... after the previous attempt failed. The first
// attempt runs as soon as the change commits; with these seven retries a
// delivery gets 8 attempts spread over about 27.5 hours, so a receiver that
// is down for a day still gets its events.
var Schedule = []time.Duration{
	5 * time.Second,
	5 * time.Minute,
	30 * time.Minute,
	2 * time.Hour,
	5 * time.Hour,
	10 * time.Hour,
	10 * time.Hour,
}

// Jitter is the spread applied to each delay of the schedule (±10%), so the
// deliveries of an endpoint that failed together do not all retry in the
// same instant.
const Jitter = 0.10

// MaxAttempts is the number of automatic attempts of a delivery under s.
func MaxAttempts(s []time.Duration) int { return len(s) + 1 }

// retryDelay is the delay after automatic attempt n (1-based) failed, with
// jitter drawn from rnd (a float in [0, 1)); ok is false when attempt n was
// the last of the schedule.
func retryDelay(s []time.Duration, n int, rnd float64) (d time.Duration, ok bool) {
	if n < 1 || n > len(s) {
		return 0, false
	}
	base := s[n-1]
	return time.Duration(float64(base) * (1 - Jitter + 2*Jitter*rnd)), true
}

// deferDelay is how long an attempt waits when its endpoint already has
// MaxInFlight requests open in this process: long enough for a hanging
// receiver to free a slot, short enough that a busy healthy one hardly
// notices.
func deferDelay() time.Duration {
	return time.Second + rand.N(time.Second)
}
