package platform

import "time"

// Clock tells the time. Every rule that depends on time reads it from here,
// so tests can move it.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock, in UTC, to the microsecond.
type SystemClock struct{}

// Now returns the current time in UTC, truncated to microseconds: that is
// what PostgreSQL keeps, so a resource reads back exactly as it was
// returned when it was created, whichever storage runs.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
