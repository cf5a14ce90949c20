package platform

import "time"

// SystemClock is the wall clock, in UTC, to the microsecond.
type SystemClock struct{}

// Now returns the current time in UTC, truncated to microseconds: that is
// what PostgreSQL keeps, so a resource reads back exactly as it was
// returned when it was created, whichever storage runs.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
