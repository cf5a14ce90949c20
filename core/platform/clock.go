package platform

import "time"

// Clock tells the time. Every rule that depends on time reads it from here,
// so tests can move it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock, in UTC.
type SystemClock struct{}

// Now returns the current time in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }
